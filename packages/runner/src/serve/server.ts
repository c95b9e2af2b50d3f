import { timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { FlakegymError, HttpError, UsageError } from "../errors.js";
import { RunDirLockedError } from "../rollout/run-lock.js";
import { checkGatewayAdvertise } from "../rollout/wire-backend.js";
import { decodePercent } from "../text/percent-decode.js";
import { capabilitiesOf } from "../workers/backend.js";
import { parseGatewayAdvertise } from "../workers/nomad/gateway.js";
import { type Admission, admit, newAdmission } from "./admission.js";
import { capEchoesDeep } from "./echo-cap.js";
import { checkGroupTasks, GroupTaskError } from "./group-tasks.js";
import {
  CANCELLED,
  doneLineOf,
  type GroupRun,
  type GroupRunnerOptions,
  readStored,
  sameRequest,
  startGroup,
} from "./groups.js";
import { requestPathOf } from "./request-path.js";
import { apiSchema, GroupRequest, type StreamLine } from "./schema.js";
import { upstreamProblem } from "./upstream-allow.js";

/**
 * `flakegym serve`: an environment server for trainers. POST /v1/groups runs a group like
 * `rollout` does (runRollout, one implementation) and streams each finished trajectory as NDJSON.
 * Back-pressure: at most `maxGroups` groups run at once, more get 429 with Retry-After. A request
 * id never runs twice: a resubmission (or GET) streams the same group, from memory or from disk.
 */

export interface ServeOptions extends GroupRunnerOptions {
  readonly host: string;
  readonly port: number;
  /** Required when `host` is not loopback; every request must then carry `Authorization: Bearer <token>`. */
  readonly token?: string;
  readonly maxGroups: number;
  readonly retryAfterS?: number;
  readonly heartbeatMs?: number;
  /** How long close() waits for groups to stop (default 12 s: within the CLI's 15 s grace after a signal). */
  readonly closeWaitMs?: number;
  /** Inference endpoints a request's `inference.base_url` may name (`--allow-upstream`); none: every one is refused. */
  readonly allowUpstreams?: readonly string[];
}

export interface ServeHandle {
  readonly url: string;
  readonly running: () => number;
  /** Stops the server; resolves to how many groups were still running (stopped unfinished: resubmit to resume). */
  close(): Promise<number>;
}

const MAX_BODY = 1 << 20;

/** Is `host` a loopback address (no token needed)? Pure. */
export const isLoopback = (host: string) =>
  host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);

/** Does the Authorization header carry the token? Constant time in the token. Pure. */
export function authorized(header: string | undefined, token: string | undefined): boolean {
  if (token === undefined) return true;
  const want = Buffer.from(`Bearer ${token}`);
  const got = Buffer.from(header ?? "");
  return got.length === want.length && timingSafeEqual(got, want);
}

export const DEFAULT_MAX_GROUPS = 2;

/**
 * The groups a server runs at once, from its flags. With --backend nomad a group's policy gateway
 * listens on the one --gateway-advertise address, so one group runs at a time (more are 429);
 * --gateway-advertise is required there and only there, and never loopback. Pure.
 */
export function serveMaxGroups(o: {
  backend: "local" | "podman" | "nomad";
  gatewayAdvertise?: string | undefined;
  maxGroups?: number | undefined;
}): number {
  if (!capabilitiesOf(o.backend).needsRoutableGateway) {
    if (o.gatewayAdvertise !== undefined)
      throw new UsageError("--gateway-advertise applies to --backend nomad only", "drop --gateway-advertise");
    return o.maxGroups ?? DEFAULT_MAX_GROUPS;
  }
  checkGatewayAdvertise(o.backend, o.gatewayAdvertise);
  try {
    parseGatewayAdvertise(o.gatewayAdvertise!);
  } catch (err) {
    throw new UsageError((err as Error).message, (err as FlakegymError).hint);
  }
  if ((o.maxGroups ?? 1) !== 1) {
    throw new UsageError(
      `--backend nomad runs one group at a time (each group's policy gateway listens on --gateway-advertise ${o.gatewayAdvertise}); --max-groups ${o.maxGroups} cannot be honoured`,
      "drop --max-groups (more requests get 429 + Retry-After), or run one server per advertised address",
    );
  }
  return 1;
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers });
  res.end(`${JSON.stringify(body)}\n`);
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (size > MAX_BODY) throw new HttpError(413, "E_TOO_LARGE", `the body exceeds ${MAX_BODY} bytes`);
    chunks.push(c);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    throw new HttpError(400, "E_JSON", "the body is not JSON: send a GroupRequest (GET /v1/schema)");
  }
}

function parseRequest(body: unknown): GroupRequest {
  const r = GroupRequest.safeParse(body);
  if (r.success) return r.data;
  const i = r.error.issues[0]!;
  throw new HttpError(
    400,
    "E_REQUEST",
    `field '${i.path.join(".") || "(body)"}': ${i.message} (the GroupRequest schema is at GET /v1/schema)`,
  );
}

/** A serve instance's state: its options and the groups it runs or is setting up. */
interface ServeState {
  readonly o: ServeOptions;
  /** Running groups (a finished one is answered from disk). */
  readonly groups: Map<string, GroupRun>;
  /** Requests being set up (validated, stored, deps created): a second one waits for the first. */
  readonly starting: Map<string, Promise<GroupRun | undefined>>;
  /** Every group holding a place, from admission (before any await) to its end. */
  readonly admission: Admission;
}

const runningCount = (s: ServeState) => s.admission.held.size;

const conflict = (id: string) =>
  new HttpError(409, "E_CONFLICT", `request_id ${id} names another request; pick a new request_id`);

/** Streams a group: what finished so far, then each new trajectory, then the end. */
function stream(res: ServerResponse, g: GroupRun, heartbeatMs: number): void {
  res.writeHead(200, { "content-type": "application/x-ndjson", "cache-control": "no-store" });
  const write = (line: StreamLine) => res.write(`${JSON.stringify(line)}\n`);
  write({
    type: "accepted",
    request_id: g.request.request_id,
    run_id: g.runId,
    status: g.status,
    replayed: g.records.length + g.errors.length,
  });
  for (const r of g.records) write(r);
  for (const e of g.errors) write(e);
  if (g.status !== "running") {
    write(doneLineOf(g));
    res.end();
    return;
  }
  const beat = setInterval(() => write({ type: "heartbeat", at: new Date().toISOString() }), heartbeatMs);
  const listener = (line: StreamLine) => {
    write(line);
    if (line.type === "done") stop();
  };
  const stop = () => {
    clearInterval(beat);
    g.listeners.delete(listener);
    if (!res.writableEnded) res.end();
  };
  g.listeners.add(listener);
  // a trainer that disconnects leaves the group running; it resubmits or GETs to read it again
  res.on("close", stop);
}

type StoredGroup = NonNullable<Awaited<ReturnType<typeof readStored>>>;

/**
 * The group answered from disk: a finished one, unless it failed and is resubmitted (then it runs
 * again). Undefined: the group must run. Pure.
 */
export function finishedGroupOf(
  request: GroupRequest,
  stored: StoredGroup | undefined,
  resubmitted: boolean,
): GroupRun | undefined {
  if (!stored?.done || (resubmitted && stored.done.status === "failed")) return undefined;
  return {
    request,
    runId: stored.runId ?? "",
    status: stored.done.status,
    ...(stored.done.detail ? { detail: stored.done.detail } : {}),
    records: stored.records,
    errors: stored.errors,
    expected: stored.done.expected ?? stored.records.length,
    listeners: new Set(),
    abort: new AbortController(),
    finished: Promise.resolve(),
  } satisfies GroupRun;
}

/** A new request's tasks checked: a bad one is a 400 naming its field (and its rows). */
async function checkNewRequest(request: GroupRequest, o: ServeOptions): Promise<void> {
  await checkGroupTasks(request, o).catch((err: unknown) => {
    if (!(err instanceof GroupTaskError)) throw err;
    const code = err.rows ? "E_ROWS" : err.field === "task" ? "E_TASK" : "E_SCENARIO";
    throw new HttpError(
      400,
      code,
      `field '${err.field}': ${err.message}`,
      err.rows ? { extra: { rows: err.rows } } : {},
    );
  });
}

/** Sets up the group of `id`: answered from disk when finished, else checked and started. */
async function setupGroup(
  s: ServeState,
  id: string,
  fresh: GroupRequest | undefined,
): Promise<GroupRun | undefined> {
  const { o } = s;
  const stored = await readStored(o.stateDir, id);
  if (stored && fresh && !sameRequest(fresh, stored.request)) throw conflict(id);
  const request = stored?.request ?? fresh;
  if (!request) return undefined;
  const finished = finishedGroupOf(request, stored, fresh !== undefined);
  if (finished) return finished;
  // before anything runs, a stored request too: the operator's list may have changed since
  const problem = request.inference && upstreamProblem(request.inference.base_url, o.allowUpstreams ?? []);
  if (problem) throw new HttpError(400, "E_UPSTREAM", `field 'inference.base_url': ${problem}`);
  if (!stored) await checkNewRequest(request, o);
  // checked and registered at once (no await between): a burst never passes the limit together
  const release = admit(s.admission, id);
  const g = await startGroup(o, request, stored).catch((err: unknown) => {
    release();
    // another server on this state dir runs the group: the same answer as a busy one here
    if (err instanceof RunDirLockedError) throw new HttpError(409, err.code, err.message);
    throw err;
  });
  s.groups.set(id, g);
  // a finished group (failed ones too) is answered from disk from now on: memory holds running groups only
  void g.finished.then(() => {
    release();
    if (g.status !== "running" && s.groups.get(id) === g) s.groups.delete(id);
  });
  return g;
}

/** The group of a request id: running, finished on disk, or started now (once). */
async function groupFor(
  s: ServeState,
  id: string,
  fresh: GroupRequest | undefined,
): Promise<GroupRun | undefined> {
  const live = s.groups.get(id);
  if (live && (live.status !== "failed" || !fresh)) {
    if (fresh && !sameRequest(fresh, live.request)) throw conflict(id);
    return live;
  }
  const pending = s.starting.get(id);
  if (pending) {
    const g = await pending;
    if (g && fresh && !sameRequest(fresh, g.request)) throw conflict(id);
    return g;
  }
  const setup = setupGroup(s, id, fresh);
  s.starting.set(id, setup);
  try {
    return await setup;
  } finally {
    s.starting.delete(id);
  }
}

/** GET or DELETE /v1/groups/<id>: stream the group, or cancel it. */
async function handleGroup(s: ServeState, method: string, rawId: string, res: ServerResponse): Promise<void> {
  const id = decodePercent(rawId);
  if (id === undefined)
    throw new HttpError(
      400,
      "E_REQUEST_ID",
      `'${rawId}' is not valid percent-encoding; request ids are [A-Za-z0-9._-], sent as they are`,
    );
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(id))
    throw new HttpError(400, "E_REQUEST_ID", `'${id}' is not a request id`);
  if (method === "DELETE") {
    const g = s.groups.get(id) ?? (await s.starting.get(id));
    if (!g) throw new HttpError(404, "E_NOT_FOUND", `no running group ${id}`);
    if (g.status === "running") g.abort.abort(CANCELLED);
    return sendJson(res, 202, {
      request_id: id,
      status: g.status === "running" ? "cancelling" : g.status,
    });
  }
  const g = await groupFor(s, id, undefined);
  if (!g) throw new HttpError(404, "E_NOT_FOUND", `no group ${id}; POST /v1/groups to start it`);
  return stream(res, g, s.o.heartbeatMs ?? 15_000);
}

async function handle(s: ServeState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { o } = s;
  if (!authorized(req.headers.authorization, o.token))
    throw new HttpError(401, "E_AUTH", "missing or wrong bearer token (Authorization: Bearer <token>)");
  const pathname = requestPathOf(req.url ?? "/");
  if (pathname === undefined)
    throw new HttpError(
      400,
      "E_URL",
      `the request target '${String(req.url).slice(0, 200)}' is not a path: send /v1/groups, /v1/groups/<request_id>, /v1/schema or /healthz`,
    );
  const m = /^\/v1\/groups\/([^/]+)$/.exec(pathname);
  if (req.method === "GET" && pathname === "/healthz")
    return sendJson(res, 200, { ok: true, running: runningCount(s), capacity: o.maxGroups });
  if (req.method === "GET" && pathname === "/v1/schema") return sendJson(res, 200, apiSchema());
  if (req.method === "POST" && pathname === "/v1/groups") {
    const request = parseRequest(await readBody(req));
    const g = await groupFor(s, request.request_id, request);
    return stream(res, g!, o.heartbeatMs ?? 15_000);
  }
  if (m && (req.method === "GET" || req.method === "DELETE")) return handleGroup(s, req.method, m[1]!, res);
  throw new HttpError(404, "E_ROUTE", `no route ${req.method} ${pathname} (see GET /v1/schema)`);
}

/** Answers a failed request with its error as JSON (a stream already started just ends). */
function sendError(res: ServerResponse, err: unknown): void {
  const e =
    err instanceof HttpError ? err : new HttpError(500, "E_INTERNAL", (err as Error)?.message ?? String(err));
  if (res.headersSent) {
    res.end();
    return;
  }
  // what the client sent is echoed cut to a bounded length, however long it was
  const error = capEchoesDeep({ code: e.code, message: e.message, ...e.extra });
  sendJson(res, e.status, { error }, e.headers);
}

/** Stops the running groups (they have no done.json: a resubmission resumes them), then the server. */
async function closeServe(s: ServeState, server: Server): Promise<number> {
  const running = [...s.groups.values()].filter((g) => g.status === "running");
  for (const g of running)
    g.abort.abort(
      "server closing: resubmit the request (or GET it) on a server over this --state-dir to resume it",
    );
  const all = Promise.all([...s.groups.values()].map((g) => g.finished));
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([all, new Promise((r) => (timer = setTimeout(r, s.o.closeWaitMs ?? 12_000)))]);
  clearTimeout(timer);
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
  return running.length;
}

export { busyError } from "./admission.js";

export async function startServe(o: ServeOptions): Promise<ServeHandle> {
  if (!isLoopback(o.host) && !o.token) {
    throw new FlakegymError(
      "E_SERVE_TOKEN",
      `serve binds ${o.host}, which is not loopback, without a token`,
      {
        hint: "set FLAKEGYM_SERVE_TOKEN (trainers send Authorization: Bearer <token>), or bind 127.0.0.1",
      },
    );
  }
  const s: ServeState = {
    o,
    groups: new Map(),
    starting: new Map(),
    admission: newAdmission(o.maxGroups, o.retryAfterS),
  };
  const server: Server = createServer((req, res) => {
    handle(s, req, res).catch((err: unknown) => sendError(res, err));
  });
  server.requestTimeout = 30_000;
  server.headersTimeout = 20_000;
  server.listen(o.port, o.host);
  await once(server, "listening");
  const addr = server.address() as AddressInfo;
  const host = addr.family === "IPv6" ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    running: () => runningCount(s),
    close: () => closeServe(s, server),
  };
}
