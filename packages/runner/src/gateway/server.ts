import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { z } from "zod";
import { FlakegymError, UsageError } from "../errors.js";
import { ResponseAccumulator, type UpstreamEvent } from "../policy/chat.js";
import type { SamplingParams } from "../policy/sampling.js";
import { type ClientProtocol, type PolicyUpstream, UpstreamError } from "../policy/upstream.js";
import { runSecrets } from "../redact/redactor.js";
import { AnthropicStreamEncoder, anthropicErrorBody, anthropicMessageBody } from "./anthropic-wire.js";
import {
  type ClientRequest,
  HttpError,
  parseClientRequest,
  parsesAfterForwarding,
  upstreamCall,
} from "./client-request.js";
import { OpenAiStreamEncoder, openAiCompletionBody, openAiErrorBody } from "./openai-wire.js";
import { TurnLogWriter, type TurnRecord, type TurnStatus } from "./turn-log.js";

/** Per-trajectory limits and watchdog settings. */
export const TrajectoryLimits = z
  .object({
    maxRequests: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("model calls allowed; the next one is refused"),
    maxCompletionTokens: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("sampled tokens allowed in total; calls after the budget is spent are refused"),
    silenceTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(120_000)
      .describe("upstream silence allowed (before the first event and between events) before 504"),
    totalTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(600_000)
      .describe("wall time one model call may take"),
    maxConsecutiveFailures: z
      .number()
      .int()
      .positive()
      .default(3)
      .describe("upstream failures in a row that end the trajectory as policy_error"),
  })
  .strict();
export type TrajectoryLimits = z.infer<typeof TrajectoryLimits>;
export type TrajectoryLimitsInput = z.input<typeof TrajectoryLimits>;

/** Why the gateway ended a trajectory; the driver maps it to the trajectory's Outcome. */
export interface GatewayTerminal {
  readonly kind: "limits_exceeded" | "timeout" | "policy_error";
  /** For `limits_exceeded`: the budget that was spent. */
  readonly limit?: "model_requests" | "completion_tokens";
  readonly message: string;
  readonly at: string;
}

export interface TrajectoryStatus {
  readonly trajectoryId: string;
  readonly upstream: string;
  /** Model calls received (refused ones included). */
  readonly requests: number;
  readonly ok: number;
  readonly failed: number;
  readonly refused: number;
  readonly inFlight: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Set once the gateway has ended the trajectory (limit, watchdog, upstream failure). */
  readonly terminal: GatewayTerminal | undefined;
}

export interface RegisterOptions {
  readonly upstream: PolicyUpstream;
  readonly limits?: TrajectoryLimitsInput;
  /** Where the turn log goes (`turns.jsonl`); no log when absent. */
  readonly turnLogPath?: string;
  /** The token the core must present (default: a fresh random one). */
  readonly token?: string;
  /** Sampling parameters every call of the trajectory is sent with, instead of the client's. */
  readonly sampling?: SamplingParams;
}

/** What a worker needs to point a Cline core at this trajectory's endpoint. */
export interface TrajectoryRoute {
  readonly trajectoryId: string;
  /** The API key to configure in the core; valid for this trajectory only. */
  readonly token: string;
  /** Path prefix of this trajectory's endpoint (`/t/<id>`). */
  readonly path: string;
  /** OpenAI-compatible base URL (the SDK appends /chat/completions), on the gateway's TCP listener. */
  readonly openaiBaseUrl: string | undefined;
  /** Anthropic base URL (the SDK appends /v1/messages), on the gateway's TCP listener. */
  readonly anthropicBaseUrl: string | undefined;
  /** The base URLs behind another origin (e.g. a forwarder inside a sandbox that reaches the socket). */
  baseUrlsFor(origin: string): { readonly openai: string; readonly anthropic: string };
  /** Aborted (reason: the GatewayTerminal) when the gateway ends the trajectory. */
  readonly signal: AbortSignal;
  status(): TrajectoryStatus;
}

export type ListenSpec = { readonly host: string; readonly port: number } | { readonly socketPath: string };

export interface PolicyGatewayOptions {
  /** Loopback TCP and/or a unix socket (for sandboxed workers). */
  readonly listen: ListenSpec | readonly ListenSpec[];
  /** Called for an unregistered trajectory id; returning options registers it on the fly. */
  readonly resolveRoute?: (trajectoryId: string) => RegisterOptions | undefined;
  readonly signal?: AbortSignal;
  /** Largest request body accepted (default 64 MiB). */
  readonly maxBodyBytes?: number;
}

export interface PolicyGateway {
  /** `http://host:port` of the TCP listener, when there is one. */
  readonly origin: string | undefined;
  readonly socketPath: string | undefined;
  register(trajectoryId: string, opts: RegisterOptions): TrajectoryRoute;
  /** Ends a trajectory's endpoint: aborts its in-flight calls and closes its turn log. */
  unregister(trajectoryId: string): Promise<TrajectoryStatus | undefined>;
  status(trajectoryId: string): TrajectoryStatus | undefined;
  close(): Promise<void>;
}

const TRAJECTORY_ID = /^[A-Za-z0-9._-]{1,128}$/;
const ROUTE = /^\/t\/([^/]+)\/v1\/(chat\/completions|messages)$/;

interface Entry {
  readonly id: string;
  readonly token: string;
  readonly upstream: PolicyUpstream;
  readonly sampling: SamplingParams | undefined;
  readonly limits: TrajectoryLimits;
  readonly log: TurnLogWriter | undefined;
  readonly ended: AbortController;
  readonly calls: Set<AbortController>;
  seq: number;
  ok: number;
  failed: number;
  refused: number;
  consecutiveFailures: number;
  promptTokens: number;
  completionTokens: number;
  terminal: GatewayTerminal | undefined;
}

class WatchdogTimeout extends Error {
  constructor(
    readonly which: "silence" | "total",
    ms: number,
  ) {
    super(
      which === "silence"
        ? `upstream sent nothing for ${ms} ms (silenceTimeoutMs)`
        : `upstream call took longer than ${ms} ms (totalTimeoutMs)`,
    );
  }
}

async function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > max)
      throw new HttpError(413, `request body larger than ${max} bytes`, "invalid_request_error");
    chunks.push(chunk);
  }
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
}

function tokenOf(req: IncomingMessage): string | undefined {
  const auth = req.headers["authorization"];
  if (typeof auth === "string" && /^bearer /i.test(auth)) return auth.slice(7).trim();
  const key = req.headers["x-api-key"];
  return typeof key === "string" ? key.trim() : undefined;
}

function statusOf(e: Entry): TrajectoryStatus {
  return {
    trajectoryId: e.id,
    upstream: e.upstream.id,
    requests: e.seq,
    ok: e.ok,
    failed: e.failed,
    refused: e.refused,
    inFlight: e.calls.size,
    promptTokens: e.promptTokens,
    completionTokens: e.completionTokens,
    terminal: e.terminal,
  };
}

/**
 * Checks a registration: the id fits in a URL path and is not registered yet, and the limits are
 * valid; returns the limits with their defaults. Throws a UsageError/FlakegymError naming the id.
 */
export function checkRegistration(
  trajectoryId: string,
  registered: boolean,
  limits: TrajectoryLimitsInput | undefined,
): TrajectoryLimits {
  if (!TRAJECTORY_ID.test(trajectoryId)) {
    throw new UsageError(
      `trajectory id '${trajectoryId}' cannot be used in a URL path`,
      "use 1-128 characters from A-Z a-z 0-9 . _ -",
    );
  }
  if (registered) {
    throw new FlakegymError(
      "E_GATEWAY",
      `trajectory '${trajectoryId}' is already registered with the gateway`,
      {
        hint: "unregister it first, or use a fresh trajectory id",
      },
    );
  }
  const parsed = TrajectoryLimits.safeParse(limits ?? {});
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new UsageError(`gateway limits for '${trajectoryId}': ${i.path.join(".")}: ${i.message}`);
  }
  return parsed.data;
}

/** A trajectory's path prefix and its base URLs behind an origin. */
export function routePaths(trajectoryId: string): Pick<TrajectoryRoute, "path" | "baseUrlsFor"> {
  const path = `/t/${trajectoryId}`;
  return {
    path,
    baseUrlsFor: (o: string) => {
      const base = o.replace(/\/+$/, "");
      return { openai: `${base}${path}/v1`, anthropic: `${base}${path}` };
    },
  };
}

/** A fresh per-trajectory API key (matches the redactor's GATEWAY_TOKEN_PATTERN). */
export const newTrajectoryToken = () => `fg-${randomBytes(24).toString("base64url")}`;

/**
 * Starts the policy gateway: one HTTP server (on loopback TCP and/or a unix socket) that serves an
 * OpenAI chat-completions and an Anthropic messages endpoint per registered trajectory under
 * `/t/<trajectoryId>/v1/…`, forwards each call to the trajectory's upstream, streams the answer back
 * in the protocol the client spoke and appends the call to the trajectory's turn log.
 */
export async function createPolicyGateway(opts: PolicyGatewayOptions): Promise<PolicyGateway> {
  const entries = new Map<string, Entry>();
  const maxBody = opts.maxBodyBytes ?? 64 * 1024 * 1024;
  const listens = (Array.isArray(opts.listen) ? opts.listen : [opts.listen]) as ListenSpec[];
  if (listens.length === 0)
    throw new UsageError("createPolicyGateway: listen names no TCP address or socket");
  const servers: Server[] = [];
  let origin: string | undefined;
  let socketPath: string | undefined;

  const endTrajectory = (
    e: Entry,
    kind: GatewayTerminal["kind"],
    message: string,
    limit?: GatewayTerminal["limit"],
  ) => {
    if (e.terminal) return;
    // the message becomes the trajectory's outcome (result.json, groups.jsonl, the trainer)
    e.terminal = {
      kind,
      ...(limit ? { limit } : {}),
      message: runSecrets.text(message),
      at: new Date().toISOString(),
    };
    e.ended.abort(e.terminal);
  };

  const register = (trajectoryId: string, r: RegisterOptions): TrajectoryRoute => {
    const limits = checkRegistration(trajectoryId, entries.has(trajectoryId), r.limits);
    const e: Entry = {
      id: trajectoryId,
      token: r.token ?? newTrajectoryToken(),
      upstream: r.upstream,
      sampling: r.sampling,
      limits,
      log: r.turnLogPath ? new TurnLogWriter(r.turnLogPath) : undefined,
      ended: new AbortController(),
      calls: new Set(),
      seq: 0,
      ok: 0,
      failed: 0,
      refused: 0,
      consecutiveFailures: 0,
      promptTokens: 0,
      completionTokens: 0,
      terminal: undefined,
    };
    entries.set(trajectoryId, e);
    runSecrets.add(e.token);
    for (const secret of r.upstream.secrets) runSecrets.add(secret);
    const { path, baseUrlsFor } = routePaths(trajectoryId);
    return {
      trajectoryId,
      token: e.token,
      path,
      openaiBaseUrl: origin ? baseUrlsFor(origin).openai : undefined,
      anthropicBaseUrl: origin ? baseUrlsFor(origin).anthropic : undefined,
      baseUrlsFor,
      signal: e.ended.signal,
      status: () => statusOf(e),
    };
  };

  const unregister = async (trajectoryId: string): Promise<TrajectoryStatus | undefined> => {
    const e = entries.get(trajectoryId);
    if (!e) return undefined;
    entries.delete(trajectoryId);
    for (const c of e.calls) c.abort(new Error(`trajectory '${trajectoryId}' was unregistered`));
    // wait (bounded) for in-flight calls to write their turn lines
    const deadline = Date.now() + 5_000;
    while (e.calls.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await e.log?.close();
    return statusOf(e);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = req.url ?? "/";
    const pathname = url.split("?")[0]!;
    if (pathname === "/healthz") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true, trajectories: entries.size }));
      return;
    }
    const m = ROUTE.exec(pathname);
    const protocol: ClientProtocol = m?.[2] === "messages" ? "anthropic" : "openai";
    const sendError = (status: number, message: string, type: string) => {
      const msg = runSecrets.text(message);
      const body = protocol === "anthropic" ? anthropicErrorBody(msg, type) : openAiErrorBody(msg, type);
      if (!res.headersSent) res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (!m) {
      sendError(
        404,
        `flakegym gateway: no route for ${req.method} ${pathname}; routes are POST /t/<trajectoryId>/v1/chat/completions and POST /t/<trajectoryId>/v1/messages`,
        "not_found_error",
      );
      return;
    }
    const trajectoryId = decodeURIComponent(m[1]!);
    let e = entries.get(trajectoryId);
    if (!e && opts.resolveRoute) {
      const r = opts.resolveRoute(trajectoryId);
      if (r) {
        register(trajectoryId, r);
        e = entries.get(trajectoryId);
      }
    }
    if (!e) {
      sendError(
        404,
        `flakegym gateway: unknown trajectory '${trajectoryId}' (${entries.size} registered); it was never registered or has been unregistered`,
        "not_found_error",
      );
      return;
    }
    if (req.method !== "POST") {
      sendError(405, `flakegym gateway: ${pathname} takes POST, got ${req.method}`, "invalid_request_error");
      return;
    }
    if (tokenOf(req) !== e.token) {
      sendError(
        401,
        `flakegym gateway: wrong or missing API key for trajectory '${trajectoryId}'`,
        "authentication_error",
      );
      return;
    }
    await serveCall(e, protocol, req, res, sendError);
  };

  const serveCall = async (
    e: Entry,
    protocol: ClientProtocol,
    req: IncomingMessage,
    res: ServerResponse,
    sendError: (status: number, message: string, type: string) => void,
  ): Promise<void> => {
    const startedAt = new Date();
    const t0 = performance.now();
    const seq = ++e.seq;
    let body: Buffer;
    let parsed: ClientRequest | undefined;
    const deferParse = parsesAfterForwarding(protocol, e.upstream.forwardsClientJson);
    try {
      body = await readBody(req, maxBody);
      if (!deferParse) parsed = parseClientRequest(protocol, body);
    } catch (err) {
      refuseBadRequest(e, err, sendError);
      return;
    }
    /** The parsed request; only read once parsing succeeded (every path below parses first). */
    const client = () => {
      parsed ??= parseClientRequest(protocol, body);
      return parsed;
    };
    const record = (status: TurnStatus, extra: Partial<TurnRecord>): Promise<void> => {
      if (!e.log) return Promise.resolve();
      const rec: TurnRecord = {
        v: 1,
        trajectoryId: e.id,
        seq,
        startedAt: startedAt.toISOString(),
        protocol,
        stream: client().raw["stream"] === true,
        upstream: e.upstream.id,
        status,
        request: client().request,
        latency: { firstByteMs: null, totalMs: round(performance.now() - t0) },
        ...extra,
      };
      return e.log.append(rec, client().requestJson).catch((err: unknown) => {
        // a turn that cannot be logged cannot be trained on: end the trajectory visibly
        endTrajectory(e, "policy_error", `turn log ${e.log?.path} failed: ${(err as Error).message}`);
      });
    };

    // refusals: an ended trajectory, or a spent budget
    const overRequests = e.limits.maxRequests !== undefined && seq > e.limits.maxRequests;
    const refusal = e.terminal
      ? `trajectory '${e.id}' was ended by the gateway (${e.terminal.kind}: ${e.terminal.message})`
      : overRequests
        ? `trajectory '${e.id}' exceeded maxRequests=${e.limits.maxRequests} (call ${seq} refused)`
        : e.limits.maxCompletionTokens !== undefined && e.completionTokens >= e.limits.maxCompletionTokens
          ? `trajectory '${e.id}' spent its maxCompletionTokens=${e.limits.maxCompletionTokens} (${e.completionTokens} sampled; call ${seq} refused)`
          : undefined;
    if (refusal) {
      try {
        client();
      } catch (err) {
        refuseBadRequest(e, err, sendError);
        return;
      }
      e.refused++;
      if (!e.terminal)
        endTrajectory(e, "limits_exceeded", refusal, overRequests ? "model_requests" : "completion_tokens");
      await record("refused", { error: refusal });
      sendError(400, `flakegym gateway: ${refusal}`, "flakegym_limit_exceeded");
      return;
    }

    const ac = new AbortController();
    e.calls.add(ac);
    const onClose = () => {
      if (!res.writableFinished) ac.abort(new Error("client closed the connection"));
    };
    res.on("close", onClose);
    const onEnded = () => ac.abort(e.ended.signal.reason);
    if (e.ended.signal.aborted) onEnded();
    e.ended.signal.addEventListener("abort", onEnded, { once: true });
    const onGateway = () => ac.abort(new Error("gateway closing"));
    opts.signal?.addEventListener("abort", onGateway, { once: true });
    // a stream that stops mid-way is as dead as one that never starts. One lazy timer: an event only
    // stamps the time; the timer, when it fires, sleeps again for what is left of the window.
    let lastEventAt = performance.now();
    const checkSilence = () => {
      const left = e.limits.silenceTimeoutMs - (performance.now() - lastEventAt);
      if (left <= 0) ac.abort(new WatchdogTimeout("silence", e.limits.silenceTimeoutMs));
      else silenceTimer = setTimeout(checkSilence, left);
    };
    let silenceTimer = setTimeout(checkSilence, e.limits.silenceTimeoutMs);
    const totalTimer = setTimeout(
      () => ac.abort(new WatchdogTimeout("total", e.limits.totalTimeoutMs)),
      e.limits.totalTimeoutMs,
    );
    const acc = new ResponseAccumulator();
    let firstByteMs: number | null = null;
    const responseId = `${protocol === "anthropic" ? "msg" : "chatcmpl"}-${e.id}-${seq}`;
    // made at the first event, when the request has been parsed
    let encoder: AnthropicStreamEncoder | OpenAiStreamEncoder | undefined;
    const encoderOf = () => {
      encoder ??= streamEncoder(protocol, responseId, client().raw, client().request.model);
      return encoder;
    };
    // The client's stream: the events of one upstream read arrive within one tick; they are
    // gathered and leave in one write at the end of that tick (process.nextTick), never later.
    let pending = "";
    let flushQueued = false;
    const flush = () => {
      flushQueued = false;
      if (pending.length === 0 || res.writableEnded || res.destroyed) return;
      const text = pending;
      pending = "";
      res.write(text);
    };
    const send = (text: string) => {
      if (text.length === 0 || res.destroyed) return;
      if (!res.headersSent) {
        res.writeHead(200, {
          "content-type": "text/event-stream; charset=utf-8",
          "cache-control": "no-cache",
          connection: "keep-alive",
          "x-accel-buffering": "no",
        });
      }
      pending += runSecrets.text(text);
      if (!flushQueued) {
        flushQueued = true;
        process.nextTick(flush);
      }
    };
    const drained = () =>
      new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          ac.signal.removeEventListener("abort", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
        ac.signal.addEventListener("abort", done, { once: true });
      });
    // the next upstream event, or the abort reason as soon as the call is aborted (an upstream
    // that ignores its signal cannot hold the call)
    let rejectWaiting: ((reason: unknown) => void) | undefined;
    const onAbort = () => rejectWaiting?.(ac.signal.reason);
    ac.signal.addEventListener("abort", onAbort, { once: true });
    const next = (it: AsyncIterator<UpstreamEvent>) =>
      new Promise<IteratorResult<UpstreamEvent>>((resolve, reject) => {
        if (ac.signal.aborted) reject(ac.signal.reason);
        else {
          rejectWaiting = reject;
          it.next().then(resolve, reject);
        }
      });
    let iterator: AsyncIterator<UpstreamEvent> | undefined;
    try {
      const call = upstreamCall(
        {
          trajectoryId: e.id,
          seq,
          protocol,
          ...(deferParse || parsed?.requestJson ? { rawJson: body } : {}),
          ...(e.sampling ? { sampling: e.sampling } : {}),
        },
        client,
      );
      iterator = e.upstream.complete(call, ac.signal)[Symbol.asyncIterator]();
      // the upstream request leaves first; the body is parsed and checked while it travels
      let first: Promise<IteratorResult<UpstreamEvent>> | undefined = next(iterator);
      if (deferParse) {
        first.catch(() => undefined); // awaited below; a failure meanwhile is not unhandled
        await checkAfterForwarding(client, ac);
      }
      const stream = client().raw["stream"] === true;
      for (;;) {
        const step = await (first ?? next(iterator));
        first = undefined;
        if (step.done) break;
        const ev = step.value;
        if (firstByteMs === null) firstByteMs = round(performance.now() - t0);
        lastEventAt = performance.now();
        acc.add(ev);
        if (stream) {
          send(encoderOf().encode(ev));
          // a client that does not read holds up the upstream (TCP backpressure), not our memory
          if (res.writableNeedDrain) await drained();
        }
      }
      if (ac.signal.aborted) throw ac.signal.reason;
      const response = acc.result();
      if (stream) {
        send(encoderOf().end());
        const text = pending;
        pending = "";
        res.end(text);
      } else {
        const body =
          protocol === "anthropic"
            ? anthropicMessageBody(responseId, client().request.model, response)
            : openAiCompletionBody(responseId, client().request.model, response);
        res.writeHead(200, { "content-type": "application/json" });
        res.end(runSecrets.text(JSON.stringify(body)));
      }
      e.ok++;
      e.consecutiveFailures = 0;
      e.promptTokens += response.usage?.promptTokens ?? 0;
      e.completionTokens += response.usage?.completionTokens ?? 0;
      await record("ok", { response, latency: { firstByteMs, totalMs: round(performance.now() - t0) } });
    } catch (err) {
      // what the client was sent before the failure goes out before the error event
      flush();
      const reason = ac.signal.aborted ? ac.signal.reason : err;
      const partial = acc.result();
      const latency = { firstByteMs, totalMs: round(performance.now() - t0) };
      if (reason instanceof HttpError) {
        refuseBadRequest(e, reason, sendError);
      } else if (reason instanceof WatchdogTimeout) {
        e.failed++;
        const msg = `trajectory '${e.id}' call ${seq}: ${reason.message}`;
        endTrajectory(e, "timeout", msg);
        await record("timeout", { error: msg, response: partial, latency });
        failResponse(res, protocol, 504, `flakegym gateway: ${msg}`, "timeout_error");
      } else if (reason instanceof UpstreamError) {
        e.failed++;
        e.consecutiveFailures++;
        const msg = `trajectory '${e.id}' call ${seq}: ${reason.message}`;
        if (reason.terminal || e.consecutiveFailures >= e.limits.maxConsecutiveFailures) {
          endTrajectory(
            e,
            "policy_error",
            reason.terminal ? msg : `${e.consecutiveFailures} upstream failures in a row; last: ${msg}`,
          );
        }
        await record("upstream_error", { error: msg, response: partial, latency });
        const status = reason.status >= 400 && reason.status < 600 ? reason.status : 502;
        failResponse(res, protocol, status, `flakegym gateway: ${msg}`, "upstream_error");
      } else if (ac.signal.aborted) {
        // client gone, trajectory ended or unregistered, gateway closing: nothing to answer
        const msg = `call ${seq} aborted: ${reason instanceof Error ? reason.message : String((reason as GatewayTerminal)?.message ?? reason)}`;
        await record("aborted", { error: msg, response: partial, latency });
        failResponse(res, protocol, 503, `flakegym gateway: ${msg}`, "aborted");
      } else {
        e.failed++;
        e.consecutiveFailures++;
        const msg = `trajectory '${e.id}' call ${seq}: gateway fault: ${(err as Error)?.message ?? String(err)}`;
        if (e.consecutiveFailures >= e.limits.maxConsecutiveFailures) endTrajectory(e, "policy_error", msg);
        await record("upstream_error", { error: msg, response: partial, latency });
        failResponse(res, protocol, 502, `flakegym gateway: ${msg}`, "upstream_error");
      }
    } finally {
      ac.signal.removeEventListener("abort", onAbort);
      iterator?.return?.().catch(() => undefined);
      clearTimeout(silenceTimer);
      clearTimeout(totalTimer);
      res.off("close", onClose);
      e.ended.signal.removeEventListener("abort", onEnded);
      opts.signal?.removeEventListener("abort", onGateway);
      e.calls.delete(ac);
    }
  };

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(
        runSecrets.text(
          JSON.stringify(
            openAiErrorBody(`flakegym gateway fault: ${(err as Error).message}`, "server_error"),
          ),
        ),
      );
    });
  };

  try {
    for (const l of listens) {
      const server = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, onRequest);
      servers.push(server);
      if ("socketPath" in l) {
        rmSync(l.socketPath, { force: true });
        server.listen(l.socketPath);
        await once(server, "listening");
        socketPath = l.socketPath;
      } else {
        server.listen(l.port, l.host);
        await once(server, "listening");
        const a = server.address() as AddressInfo;
        const host = a.family === "IPv6" ? `[${a.address}]` : a.address;
        origin = `http://${host}:${a.port}`;
      }
    }
  } catch (err) {
    for (const s of servers) s.close();
    throw new FlakegymError("E_GATEWAY", `policy gateway could not listen: ${(err as Error).message}`, {
      cause: err,
    });
  }

  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await Promise.all([...entries.keys()].map((id) => unregister(id)));
    await Promise.all(
      servers.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.close(() => resolve());
            s.closeAllConnections();
          }),
      ),
    );
    if (socketPath) rmSync(socketPath, { force: true });
  };
  opts.signal?.addEventListener("abort", () => void close(), { once: true });

  return {
    origin,
    socketPath,
    register,
    unregister,
    status: (id) => {
      const e = entries.get(id);
      return e ? statusOf(e) : undefined;
    },
    close,
  };
}

const round = (ms: number) => Math.round(ms * 100) / 100;

/** Answers a failed call: a JSON error, or an error event when the stream had begun. */
function failResponse(
  res: ServerResponse,
  protocol: ClientProtocol,
  status: number,
  message: string,
  type: string,
): void {
  if (res.destroyed || res.writableEnded) return;
  const msg = runSecrets.text(message);
  const body = protocol === "anthropic" ? anthropicErrorBody(msg, type) : openAiErrorBody(msg, type);
  if (!res.headersSent) {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
    return;
  }
  const text =
    protocol === "anthropic"
      ? `event: error\ndata: ${JSON.stringify(body)}\n\n`
      : `data: ${JSON.stringify(body)}\n\n`;
  res.end(text);
}

/** Refuses a call whose body is bad (not JSON, wrong fields, too large): counted, not recorded as a turn. */
function refuseBadRequest(
  e: { refused: number },
  err: unknown,
  sendError: (status: number, message: string, type: string) => void,
): void {
  e.refused++;
  if (err instanceof HttpError) sendError(err.status, `flakegym gateway: ${err.message}`, err.type);
  else sendError(400, `flakegym gateway: bad request: ${(err as Error).message}`, "invalid_request_error");
}

/**
 * Parses and checks a call's body once its upstream request has left (after this round of I/O, so
 * the request's bytes are written first); a bad body aborts the call with its {@link HttpError}.
 */
async function checkAfterForwarding(client: () => ClientRequest, ac: AbortController): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  try {
    client();
  } catch (err) {
    ac.abort(err);
  }
}

function streamEncoder(
  protocol: ClientProtocol,
  responseId: string,
  raw: Readonly<Record<string, unknown>>,
  model: string,
): AnthropicStreamEncoder | OpenAiStreamEncoder {
  if (protocol === "anthropic") return new AnthropicStreamEncoder(responseId, model);
  const includeUsage =
    (raw["stream_options"] as { include_usage?: unknown } | undefined)?.include_usage === true;
  return new OpenAiStreamEncoder(responseId, model, includeUsage);
}
