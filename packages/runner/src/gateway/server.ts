import { once } from "node:events";
import { rmSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { FlakegymError, UsageError } from "../errors.js";
import type { ClientProtocol } from "../policy/upstream.js";
import { runSecrets } from "../redact/redactor.js";
import { admitCall, DEFAULT_MAX_CALLS_PER_TRAJECTORY } from "./admission.js";
import { anthropicErrorBody } from "./anthropic-wire.js";
import { openAiErrorBody } from "./openai-wire.js";
import { type CallContext, serveCall } from "./serve-call.js";
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

const ROUTE = /^\/t\/([^/]+)\/v1\/(chat\/completions|messages)$/;

function tokenOf(req: IncomingMessage): string | undefined {
  const auth = req.headers["authorization"];
  if (typeof auth === "string" && /^bearer /i.test(auth)) return auth.slice(7).trim();
  const key = req.headers["x-api-key"];
  return typeof key === "string" ? key.trim() : undefined;
}

/**
 * Starts the policy gateway: one HTTP server (on loopback TCP and/or a unix socket) that serves an
 * OpenAI chat-completions and an Anthropic messages endpoint per registered trajectory under
 * `/t/<trajectoryId>/v1/…`, forwards each call to the trajectory's upstream, streams the answer back
 * in the protocol the client spoke and appends the call to the trajectory's turn log.
 */
export async function createPolicyGateway(opts: PolicyGatewayOptions): Promise<PolicyGateway> {
  const entries = new Map<string, Entry>();
  const maxBody = opts.maxBodyBytes ?? 64 * 1024 * 1024;
  const maxCalls = opts.maxCallsPerTrajectory ?? DEFAULT_MAX_CALLS_PER_TRAJECTORY;
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

  const callContext: CallContext = { maxBody, signal: opts.signal, endTrajectory };

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
      admitted: 0,
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
    const refused = admitCall({
      trajectoryId,
      inFlight: e.admitted,
      maxInFlight: maxCalls,
      contentLength: req.headers["content-length"],
      maxBody,
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
      await serveCall(callContext, e, protocol, req, res, sendError);
    } finally {
      e.admitted--;
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
