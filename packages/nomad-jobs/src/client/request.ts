import { readFileSync } from "node:fs";
import http, { type IncomingHttpHeaders, type IncomingMessage } from "node:http";
import https from "node:https";
import type { z } from "zod";
import { createDeadline } from "../deadline.js";
import {
  backoffMs,
  type CallPlan,
  connectHint,
  planCall,
  resendAfterConnectError,
  resendAfterStatus,
  resendOnFreshSocket,
} from "./call-plan.js";
import type { NomadClientConfig } from "./config.js";
import { errnoOf, hintForStatus, NomadError } from "./errors.js";

/**
 * The one request core every resource file goes through: address, token, namespace, region and
 * TLS from the config; an overall deadline and the caller's AbortSignal on every call; retries
 * with backoff only where resending is safe; responses parsed with zod.
 *
 * Retry rule: a call marked idempotent (GET, DELETE, and a dispatch carrying an idempotency
 * token) is retried on 429, 5xx and network errors. Any other call is resent only when the
 * connection failed before the request could reach the server (ECONNREFUSED, DNS failures...).
 */

export interface CallOptions {
  /** Stops the call (and its retries); the error is E_NOMAD_ABORTED. */
  readonly signal?: AbortSignal;
  /** Deadline of the whole call, retries included (default: config.timeoutMs). */
  readonly timeoutMs?: number;
  /** What `timeoutMs` is called where the user sets it, for the timeout error (e.g. `cleanupTimeoutMs`). */
  readonly timeoutName?: string;
  readonly namespace?: string;
  readonly region?: string;
}

export interface QueryOptions extends CallOptions {
  /** Blocking query: answer once the resource's index is greater than this. */
  readonly index?: number;
  /** Bound of a blocking query (the server caps it at 10 min). */
  readonly waitMs?: number;
}

export interface QueryMeta {
  /** X-Nomad-Index: pass it back as `index` to block until something changes. */
  readonly index: number | undefined;
  readonly knownLeader: boolean;
  readonly lastContactMs: number | undefined;
}

export interface Result<T> {
  readonly data: T;
  readonly meta: QueryMeta;
}

export type QueryValue = string | number | boolean | undefined | readonly string[];

export interface RequestSpec {
  readonly method: "GET" | "PUT" | "POST" | "DELETE";
  readonly path: string;
  readonly query?: Readonly<Record<string, QueryValue>>;
  readonly body?: unknown;
  /** Statuses that count as success (default [200]). */
  readonly expected?: readonly number[];
  /** Whether resending is safe (default: GET and DELETE). */
  readonly idempotent?: boolean;
}

export interface RequestCore {
  readonly config: NomadClientConfig;
  json<S extends z.ZodType>(spec: RequestSpec, schema: S, opts?: QueryOptions): Promise<Result<z.infer<S>>>;
  text(spec: RequestSpec, opts?: QueryOptions): Promise<Result<string>>;
  /** Opens a streaming response; it ends when the server ends it or `signal` aborts. */
  stream(spec: RequestSpec, opts?: QueryOptions): Promise<{ response: IncomingMessage; meta: QueryMeta }>;
  /** Closes idle keep-alive connections. */
  close(): void;
}

function metaOf(headers: IncomingHttpHeaders): QueryMeta {
  const num = (h: string | string[] | undefined) => {
    const v = Array.isArray(h) ? h[0] : h;
    if (v === undefined || v === "") return undefined;
    const n = Number(v);
    return Number.isFinite(n) ? n : undefined;
  };
  return {
    index: num(headers["x-nomad-index"]),
    knownLeader: headers["x-nomad-knownleader"] === "true",
    lastContactMs: num(headers["x-nomad-lastcontact"]),
  };
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });

/** What one request core holds, shared by its functions: its config, the connection pool and TLS options. */
interface CoreState {
  readonly config: NomadClientConfig;
  readonly isHttps: boolean;
  readonly tls: TlsOptions;
  readonly agent: http.Agent;
}

/** The TLS options of every connection (empty for plain HTTP). */
interface TlsOptions {
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly rejectUnauthorized?: boolean;
  readonly servername?: string;
}

function tlsOf(config: NomadClientConfig): TlsOptions {
  return {
    ...(config.tls.caCert ? { ca: readFileSync(config.tls.caCert) } : {}),
    ...(config.tls.clientCert ? { cert: readFileSync(config.tls.clientCert) } : {}),
    ...(config.tls.clientKey ? { key: readFileSync(config.tls.clientKey) } : {}),
    rejectUnauthorized: !config.tls.skipVerify,
    ...(config.tls.serverName ? { servername: config.tls.serverName } : {}),
  };
}

function coreStateOf(config: NomadClientConfig): CoreState {
  const isHttps = new URL(config.address).protocol === "https:";
  const tls = isHttps ? tlsOf(config) : {};
  const agent = isHttps ? new https.Agent({ keepAlive: true, ...tls }) : new http.Agent({ keepAlive: true });
  return { config, isHttps, tls, agent };
}

/**
 * Sends once; resolves with the response once headers arrive. `signal` guards only this phase:
 * after the headers, reading the body (or a stream) attaches its own abort handling.
 */
function send(
  st: CoreState,
  method: RequestSpec["method"],
  u: URL,
  body: string | undefined,
  signal: AbortSignal,
  fresh = false,
) {
  return new Promise<IncomingMessage>((resolve, reject) => {
    const headers: Record<string, string> = { Accept: "application/json" };
    if (st.config.token) headers["X-Nomad-Token"] = st.config.token;
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      headers["Content-Length"] = String(Buffer.byteLength(body));
    }
    const onAbort = () => req.destroy(new Error("aborted"));
    const req = (st.isHttps ? https : http).request(
      u,
      // fresh: a connection of its own (agent false), never one the pool kept idle
      { method, headers, agent: fresh ? false : st.agent, ...st.tls },
      (res) => {
        signal.removeEventListener("abort", onAbort);
        resolve(res);
      },
    );
    req.on("error", (e) => {
      signal.removeEventListener("abort", onAbort);
      reject(Object.assign(e, { reusedSocket: req.reusedSocket }));
    });
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    req.end(body);
  });
}

function readBody(res: IncomingMessage, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const onAbort = () => res.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    signal.addEventListener("abort", onAbort, { once: true });
    res.on("data", (c: Buffer) => chunks.push(c));
    res.on("end", () => {
      signal.removeEventListener("abort", onAbort);
      resolve(Buffer.concat(chunks).toString("utf8"));
    });
    res.on("error", (e) => {
      signal.removeEventListener("abort", onAbort);
      reject(e);
    });
  });
}

/** One call in flight: what it asked, its plan, and the signal of its deadline. */
interface Call {
  readonly st: CoreState;
  readonly spec: RequestSpec;
  readonly opts: QueryOptions;
  readonly plan: CallPlan;
  readonly signal: AbortSignal;
}

type Consume<T> = (res: IncomingMessage, signal: AbortSignal, path: string) => Promise<T>;

/** One try's end: the result, or the error to resend after (an error not to resend is thrown). */
type Step<T> = { readonly value: T } | { readonly retry: NomadError };

/** The error of a call its caller aborted or its deadline ended. */
function stopped(c: Call, attempts: number, cause?: unknown): NomadError {
  const { spec, opts, plan } = c;
  const where = { method: spec.method, path: plan.path, expected: plan.expected, attempts };
  if (opts.signal?.aborted) {
    return new NomadError(
      "E_NOMAD_ABORTED",
      `Nomad ${spec.method} ${plan.path}: aborted${abortDetail(opts.signal.reason)}`,
      { ...where, cause: opts.signal.reason ?? cause },
    );
  }
  return new NomadError(
    "E_NOMAD_TIMEOUT",
    `Nomad ${spec.method} ${plan.path}: no answer within ${plan.timeoutMs} ms (${plan.limit})`,
    { ...where, hint: `is the Nomad agent at ${c.st.config.address} reachable and healthy?`, cause },
  );
}

/** A try whose request failed to go out or come back. */
function afterSendError<T>(c: Call, attempt: number, err: unknown): Step<T> {
  if (c.signal.aborted) throw stopped(c, attempt, err);
  const errno = errnoOf(err);
  const message = (err as Error).message;
  const { spec, plan } = c;
  const error = new NomadError(
    "E_NOMAD_CONNECT",
    `Nomad ${spec.method} ${plan.path}: cannot reach ${c.st.config.address}: ${message}`,
    {
      method: spec.method,
      path: plan.path,
      expected: plan.expected,
      attempts: attempt,
      cause: err,
      hint: connectHint(errno, message, c.st.config.address),
    },
  );
  if (resendAfterConnectError(plan.idempotent, errno)) return { retry: error };
  throw error;
}

/** A try whose expected response could not be consumed (a NomadError of the consumer is final). */
function afterConsumeError<T>(c: Call, attempt: number, err: unknown, streaming: boolean): Step<T> {
  if (err instanceof NomadError) throw err;
  if (c.signal.aborted) throw stopped(c, attempt, err);
  if (streaming) throw err;
  const { spec, plan } = c;
  const error = new NomadError(
    "E_NOMAD_CONNECT",
    `Nomad ${spec.method} ${plan.path}: response cut off: ${(err as Error).message}`,
    { method: spec.method, path: plan.path, expected: plan.expected, attempts: attempt, cause: err },
  );
  if (plan.idempotent) return { retry: error };
  throw error;
}

/** A try answered with a status the call did not expect. */
async function afterUnexpectedStatus<T>(c: Call, attempt: number, res: IncomingMessage): Promise<Step<T>> {
  const status = res.statusCode ?? 0;
  let text = "";
  try {
    text = await readBody(res, c.signal);
  } catch (err) {
    if (c.signal.aborted) throw stopped(c, attempt, err);
  }
  const { spec, plan } = c;
  const error = new NomadError(
    "E_NOMAD_HTTP",
    `Nomad ${spec.method} ${plan.path}: unexpected response ${status} (expected ${plan.expected.join(" or ")}): ${text.trim().slice(0, 2_000) || "(empty body)"}`,
    {
      method: spec.method,
      path: plan.path,
      status,
      body: text,
      expected: plan.expected,
      attempts: attempt,
      ...withHint(hintForStatus(status, c.st.config.address, text)),
    },
  );
  if (resendAfterStatus(plan.idempotent, status)) return { retry: error };
  throw error;
}

/**
 * Sends the call; a safe call reset on a reused keep-alive socket (the server closed it while it
 * sat idle in the pool: a race, not a failure of the server) is resent at once on a fresh
 * connection, without spending one of the call's attempts or waiting a backoff.
 */
async function sendOnce(c: Call): Promise<IncomingMessage> {
  const { st, spec, plan, signal } = c;
  try {
    return await send(st, spec.method, plan.url, plan.body, signal);
  } catch (err) {
    const reused = (err as { reusedSocket?: boolean }).reusedSocket === true;
    if (signal.aborted || !resendOnFreshSocket(plan.idempotent, reused, errnoOf(err))) throw err;
    return send(st, spec.method, plan.url, plan.body, signal, true);
  }
}

async function tryOnce<T>(
  c: Call,
  attempt: number,
  consume: Consume<T>,
  streaming: boolean,
): Promise<Step<T>> {
  let res: IncomingMessage;
  try {
    res = await sendOnce(c);
  } catch (err) {
    return afterSendError(c, attempt, err);
  }
  if (!c.plan.expected.includes(res.statusCode ?? 0)) return afterUnexpectedStatus(c, attempt, res);
  try {
    return { value: await consume(res, c.signal, c.plan.path) };
  } catch (err) {
    return afterConsumeError(c, attempt, err, streaming);
  }
}

/** Runs the retry loop; `consume` turns a successful response into the result. */
async function call<T>(
  st: CoreState,
  spec: RequestSpec,
  opts: QueryOptions,
  consume: Consume<T>,
  streaming = false,
): Promise<T> {
  const plan = planCall(st.config, spec, opts);
  using deadline = createDeadline({
    signals: [opts.signal],
    timeout: { ms: plan.timeoutMs, limit: plan.limit },
  });
  const c: Call = { st, spec, opts, plan, signal: deadline.signal };
  let lastError: NomadError | undefined;
  for (let attempt = 1; attempt <= st.config.retry.attempts; attempt++) {
    if (attempt > 1) await sleep(backoffMs(st.config.retry, attempt, Math.random()), c.signal);
    if (c.signal.aborted) throw stopped(c, attempt - 1, lastError);
    const step = await tryOnce(c, attempt, consume, streaming);
    if ("value" in step) return step.value;
    lastError = step.retry;
  }
  throw lastError!;
}

/** A JSON answer checked against `schema`; a body that is not JSON or not that shape is E_NOMAD_RESPONSE. */
function parseAnswer<S extends z.ZodType>(
  c: { spec: RequestSpec; path: string; address: string },
  res: IncomingMessage,
  text: string,
  schema: S,
): z.infer<S> {
  const where = { method: c.spec.method, path: c.path, status: res.statusCode };
  let raw: unknown;
  try {
    raw = text === "" ? null : JSON.parse(text);
  } catch (err) {
    throw new NomadError(
      "E_NOMAD_RESPONSE",
      `Nomad ${c.spec.method} ${c.path}: answer is not JSON: ${text.slice(0, 200)}`,
      { ...where, body: text, cause: err, hint: `is ${c.address} a Nomad agent?` },
    );
  }
  const parsed = schema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const i = parsed.error.issues[0]!;
  throw new NomadError(
    "E_NOMAD_RESPONSE",
    `Nomad ${c.spec.method} ${c.path}: unexpected answer: field '${i.path.join(".") || "(root)"}': ${i.message}`,
    {
      ...where,
      body: text.slice(0, 4_000),
      hint: "the agent's API differs from what flakegym expects (Nomad ≥ 2.0.4 is supported)",
    },
  );
}

/** Ends a streaming response when the caller's signal aborts. */
function endOnAbort(res: IncomingMessage, user: AbortSignal | undefined): void {
  if (!user) return;
  const onAbort = () => res.destroy();
  if (user.aborted) onAbort();
  else user.addEventListener("abort", onAbort, { once: true });
  res.once("close", () => user.removeEventListener("abort", onAbort));
}

export function createRequestCore(config: NomadClientConfig): RequestCore {
  const st = coreStateOf(config);
  return {
    config,
    json(spec, schema, opts = {}) {
      return call(st, spec, opts, async (res, signal, path) => {
        const text = await readBody(res, signal);
        const data = parseAnswer({ spec, path, address: config.address }, res, text, schema);
        return { data, meta: metaOf(res.headers) };
      });
    },
    text(spec, opts = {}) {
      return call(st, spec, opts, async (res, signal) => ({
        data: await readBody(res, signal),
        meta: metaOf(res.headers),
      }));
    },
    stream(spec, opts = {}) {
      // The deadline bounds getting the response; the stream itself lives until the caller aborts.
      const open = async (res: IncomingMessage) => {
        endOnAbort(res, opts.signal);
        return { response: res, meta: metaOf(res.headers) };
      };
      return call(st, spec, opts, open, true);
    },
    close() {
      st.agent.destroy();
    },
  };
}

/** A caller's deadline (a `TimeoutError` reason) is worth naming: it says which limit ran out. */
function abortDetail(reason: unknown): string {
  return reason instanceof Error && reason.name === "TimeoutError" ? ` (${reason.message})` : "";
}

function withHint(hint: string | undefined): { hint?: string } {
  return hint === undefined ? {} : { hint };
}
