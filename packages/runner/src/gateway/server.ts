import { once } from "node:events";
import { rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { closeHttpServers } from "@flakegym/cline-vendor";
import { FlakegymError, UsageError } from "../errors.js";
import type { ClientProtocol } from "../policy/upstream.js";
import { runSecrets } from "../redact/redactor.js";
import { admitCall, DEFAULT_MAX_CALLS_PER_TRAJECTORY } from "./admission.js";
import { monotonicOf } from "./call-watch.js";
import { errorBodyOf } from "./error-body.js";
import { openAiErrorBody } from "./openai-wire.js";
import { requestRefusal, routeOf, tokenOf } from "./request-route.js";
import { type CallContext, serveCall } from "./serve-call.js";
import { threadRunClock } from "./thread-run-clock.js";
import { TurnLogWriter } from "./turn-log.js";
import {
  checkRegistration,
  type Entry,
  type GatewayTerminal,
  type ListenSpec,
  newTrajectoryToken,
  type PolicyGateway,
  type PolicyGatewayOptions,
  type RegisterOptions,
  routePaths,
  statusOf,
  type TrajectoryRoute,
  type TrajectoryStatus,
} from "./types.js";

/** What one gateway holds, shared by its functions: its options, trajectories and servers. */
interface GatewayState {
  readonly opts: PolicyGatewayOptions;
  readonly entries: Map<string, Entry>;
  readonly maxBody: number;
  readonly maxCalls: number;
  readonly servers: Server[];
  /** What every call is served with (serve-call.ts). */
  readonly call: CallContext;
  /** `http://host:port` of the TCP listener, once it listens. */
  origin: string | undefined;
  socketPath: string | undefined;
  closed: boolean;
}

/**
 * Starts the policy gateway: one HTTP server (on loopback TCP and/or a unix socket) that serves an
 * OpenAI chat-completions and an Anthropic messages endpoint per registered trajectory under
 * `/t/<trajectoryId>/v1/…`, forwards each call to the trajectory's upstream, streams the answer back
 * in the protocol the client spoke and appends the call to the trajectory's turn log.
 */
export async function createPolicyGateway(opts: PolicyGatewayOptions): Promise<PolicyGateway> {
  const maxBody = opts.maxBodyBytes ?? 64 * 1024 * 1024;
  const listens = (Array.isArray(opts.listen) ? opts.listen : [opts.listen]) as ListenSpec[];
  if (listens.length === 0)
    throw new UsageError("createPolicyGateway: listen names no TCP address or socket");
  const st: GatewayState = {
    opts,
    entries: new Map(),
    maxBody,
    maxCalls: opts.maxCallsPerTrajectory ?? DEFAULT_MAX_CALLS_PER_TRAJECTORY,
    servers: [],
    call: {
      maxBody,
      signal: opts.signal,
      endTrajectory,
      runClock: opts.measureRunTime ? threadRunClock() : undefined,
    },
    origin: undefined,
    socketPath: undefined,
    closed: false,
  };
  await listenAll(st, listens);
  opts.signal?.addEventListener("abort", () => void closeGateway(st), { once: true });
  return {
    origin: st.origin,
    socketPath: st.socketPath,
    register: (id, r) => register(st, id, r),
    unregister: (id) => unregister(st, id),
    status: (id) => {
      const e = st.entries.get(id);
      return e ? statusOf(e) : undefined;
    },
    close: () => closeGateway(st),
  };
}

/** Ends a trajectory once (a later end is ignored): its terminal is set and its signal aborted. */
function endTrajectory(
  e: Entry,
  kind: GatewayTerminal["kind"],
  message: string,
  limit?: GatewayTerminal["limit"],
): void {
  if (e.terminal) return;
  // the message becomes the trajectory's outcome (result.json, groups.jsonl, the trainer)
  e.terminal = {
    kind,
    ...(limit ? { limit } : {}),
    message: runSecrets.text(message),
    at: new Date().toISOString(),
  };
  e.ended.abort(e.terminal);
}

function register(st: GatewayState, trajectoryId: string, r: RegisterOptions): TrajectoryRoute {
  const limits = checkRegistration(trajectoryId, st.entries.has(trajectoryId), r.limits);
  const e: Entry = {
    id: trajectoryId,
    token: r.token ?? newTrajectoryToken(),
    upstream: r.upstream,
    sampling: r.sampling,
    limits,
    deadlineMono: monotonicOf(limits.deadlineAt, Date.now(), performance.now()),
    log: r.turnLogPath ? new TurnLogWriter(r.turnLogPath) : undefined,
    ended: new AbortController(),
    calls: new Set(),
    admitted: 0,
    seq: 0,
    ok: 0,
    failed: 0,
    refused: 0,
    consecutiveFailures: 0,
    promptTokens: 0,
    completionTokens: 0,
    terminal: undefined,
    lastAnswered: undefined,
  };
  st.entries.set(trajectoryId, e);
  runSecrets.add(e.token);
  for (const secret of r.upstream.secrets) runSecrets.add(secret);
  const { path, baseUrlsFor } = routePaths(trajectoryId);
  return {
    trajectoryId,
    token: e.token,
    path,
    openaiBaseUrl: st.origin ? baseUrlsFor(st.origin).openai : undefined,
    anthropicBaseUrl: st.origin ? baseUrlsFor(st.origin).anthropic : undefined,
    baseUrlsFor,
    signal: e.ended.signal,
    status: () => statusOf(e),
  };
}

async function unregister(st: GatewayState, trajectoryId: string): Promise<TrajectoryStatus | undefined> {
  const e = st.entries.get(trajectoryId);
  if (!e) return undefined;
  st.entries.delete(trajectoryId);
  for (const c of e.calls) c.abort(new Error(`trajectory '${trajectoryId}' was unregistered`));
  // wait (bounded) for in-flight calls to write their turn lines
  const deadline = Date.now() + 5_000;
  while (e.calls.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  await e.log?.close();
  return statusOf(e);
}

/** Answers an error as JSON in the protocol the client spoke, every secret masked. */
function errorSender(res: ServerResponse, protocol: ClientProtocol) {
  return (status: number, message: string, type: string) => {
    const msg = runSecrets.text(message);
    const body = errorBodyOf(protocol, msg, type);
    if (!res.headersSent) res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
  };
}

/** The registered trajectory a route names; an unknown one is registered on the fly by `resolveRoute`. */
function entryOf(st: GatewayState, trajectoryId: string): Entry | undefined {
  const e = st.entries.get(trajectoryId);
  if (e || !st.opts.resolveRoute) return e;
  const r = st.opts.resolveRoute(trajectoryId);
  if (!r) return undefined;
  register(st, trajectoryId, r);
  return st.entries.get(trajectoryId);
}

/** Serves one request: the health check, a refusal, or a model call of a registered trajectory. */
async function handle(st: GatewayState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = req.url ?? "/";
  const route = routeOf(url);
  if (route.kind === "health") {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ok: true, trajectories: st.entries.size }));
    return;
  }
  const sendError = errorSender(res, route.protocol);
  const e = route.kind === "call" ? entryOf(st, route.trajectoryId) : undefined;
  const refusal = requestRefusal({
    method: req.method,
    url,
    route,
    expectedToken: e?.token,
    presentedToken: e ? tokenOf(req.headers) : undefined,
    registered: st.entries.size,
  });
  if (refusal) return sendError(refusal.status, refusal.message, refusal.type);
  await admitAndServe(st, e!, route.protocol, req, res, sendError);
}

/** Admits a call from its headers (in-flight bound, declared size) and serves it. */
async function admitAndServe(
  st: GatewayState,
  e: Entry,
  protocol: ClientProtocol,
  req: IncomingMessage,
  res: ServerResponse,
  sendError: (status: number, message: string, type: string) => void,
): Promise<void> {
  const refused = admitCall({
    trajectoryId: e.id,
    inFlight: e.admitted,
    maxInFlight: st.maxCalls,
    contentLength: req.headers["content-length"],
    maxBody: st.maxBody,
  });
  if (refused) {
    // counted like a call refused for its body (a request, refused, no turn)
    e.seq++;
    e.refused++;
    // nothing of the body is read: the connection closes after the answer
    res.setHeader("connection", "close");
    sendError(refused.status, refused.message, refused.type);
    return;
  }
  e.admitted++;
  try {
    await serveCall(st.call, e, protocol, req, res, sendError);
  } finally {
    e.admitted--;
  }
}

/** A fault of the gateway's own while serving a request: answered 500, secrets masked. */
function answerFault(res: ServerResponse, err: unknown): void {
  if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
  res.end(
    runSecrets.text(
      JSON.stringify(openAiErrorBody(`flakegym gateway fault: ${(err as Error).message}`, "server_error")),
    ),
  );
}

/** Listens on every address and socket; a failure closes what listened and throws E_GATEWAY. */
async function listenAll(st: GatewayState, listens: readonly ListenSpec[]): Promise<void> {
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(st, req, res).catch((err: unknown) => answerFault(res, err));
  };
  try {
    for (const l of listens) {
      const server = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, onRequest);
      st.servers.push(server);
      if ("socketPath" in l) {
        rmSync(l.socketPath, { force: true });
        server.listen(l.socketPath);
        await once(server, "listening");
        st.socketPath = l.socketPath;
      } else {
        server.listen(l.port, l.host);
        await once(server, "listening");
        st.origin = originOf(server.address() as AddressInfo);
      }
    }
  } catch (err) {
    for (const s of st.servers) s.close();
    throw new FlakegymError("E_GATEWAY", `policy gateway could not listen: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/** `http://host:port` of a TCP listener's address (an IPv6 host in brackets). */
export function originOf(a: Pick<AddressInfo, "address" | "family" | "port">): string {
  const host = a.family === "IPv6" ? `[${a.address}]` : a.address;
  return `http://${host}:${a.port}`;
}

/** Closes once: unregisters every trajectory, closes the servers and their connections, removes the socket. */
async function closeGateway(st: GatewayState): Promise<void> {
  if (st.closed) return;
  st.closed = true;
  await Promise.all([...st.entries.keys()].map((id) => unregister(st, id)));
  await closeHttpServers(st.servers);
  st.call.runClock?.close();
  if (st.socketPath) rmSync(st.socketPath, { force: true });
}
