import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";
import { createDeadline } from "@flakegym/nomad-jobs";
import { FlakegymError, UsageError } from "../errors.js";
import { type PolicyUpstream, UpstreamError } from "../policy/upstream.js";
import { runSecrets } from "../redact/redactor.js";
import type { FromGateway, SyncAnswer, ThreadError, ThreadInit, ToGateway } from "./thread-protocol.js";
import {
  checkRegistration,
  type ListenSpec,
  newTrajectoryToken,
  type PolicyGateway,
  type PolicyGatewayOptions,
  type RegisterOptions,
  routePaths,
  type TrajectoryRoute,
  type TrajectoryStatus,
} from "./types.js";

/** The gateway thread's young generation, MiB (V8's default on 64-bit: 3 × 16 MiB semi-spaces = 48). */
export const GATEWAY_YOUNG_GENERATION_MB = 96;

/** How long the thread may take to start (it compiles its sources when run from a checkout). */
const READY_MS = 60_000;
/** How long unregister/close wait for the thread's answer (unregister waits up to 5 s for calls). */
const REPLY_MS = 15_000;
/** How long a synchronous `status()` blocks for the thread's answer before using the last one known. */
const SYNC_MS = 2_000;

/** The policy gateway in a thread of its own, and the handle to that thread. */
export interface ThreadedPolicyGateway extends PolicyGateway {
  /** The gateway's thread (its exit, unless `close()` asked for it, fails every trajectory). */
  readonly thread: Worker;
}

/** The worker source: TypeScript from a checkout (through tsx's loader), JavaScript when built. */
function workerScript(): URL {
  const entry = new URL(`./thread-worker${import.meta.url.endsWith(".ts") ? ".ts" : ".js"}`, import.meta.url);
  if (!entry.pathname.endsWith(".ts")) return entry;
  const tsx = import.meta.resolve("tsx/esm/api");
  const code = `const { register } = await import(${JSON.stringify(tsx)}); register(); await import(${JSON.stringify(entry.href)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}

/** An error that crosses to the gateway thread. */
function threadErrorOf(err: unknown): ThreadError {
  const message = err instanceof Error ? err.message : String(err);
  return err instanceof UpstreamError
    ? { message, upstream: { status: err.status, terminal: err.terminal } }
    : { message };
}

/**
 * Starts the policy gateway (createPolicyGateway, same interface and behaviour) in a worker thread
 * of its own, so that the Cline cores' model calls never wait for the runner's event loop (the
 * cores' gRPC streams, sandboxes, scoring). Control calls cross a message channel: `register`
 * posts and returns at once (the id, limits and token are checked here first, so it throws as the
 * in-thread gateway does); `status` blocks for the thread's answer (bounded; see SYNC_MS);
 * terminal verdicts abort the route's signal as they happen. Upstreams with a portable form
 * (openai, anthropic) are rebuilt in the thread; the calls of any other (scripted plans) come back
 * to this thread. If the thread dies, every route's signal aborts with an E_GATEWAY error naming
 * it (an infra fault: not a verdict on the trajectory) and every control call fails with it.
 */
export async function startGatewayThread(opts: PolicyGatewayOptions): Promise<ThreadedPolicyGateway> {
  if (opts.resolveRoute)
    throw new UsageError(
      "startGatewayThread: resolveRoute needs the in-thread gateway (createPolicyGateway)",
    );
  const listen = (Array.isArray(opts.listen) ? opts.listen : [opts.listen]) as ListenSpec[];
  const sync = new MessageChannel();
  const syncFlag = new SharedArrayBuffer(4);
  const flag = new Int32Array(syncFlag);
  const init: ThreadInit & { syncPort: MessageChannel["port2"] } = {
    listen,
    maxBodyBytes: opts.maxBodyBytes,
    maxCallsPerTrajectory: opts.maxCallsPerTrajectory,
    secrets: runSecrets.values(),
    syncFlag,
    syncPort: sync.port2,
  };
  const thread = new Worker(workerScript(), {
    workerData: init,
    transferList: [sync.port2],
    // every call allocates its request body, the parsed request and the turn line (≈ 100–200 KB,
    // short-lived): a young generation of twice the default scavenges half as often (issue 32)
    resourceLimits: { maxYoungGenerationSizeMb: GATEWAY_YOUNG_GENERATION_MB },
  });

  interface Held {
    readonly upstream: PolicyUpstream;
    readonly ended: AbortController;
    /** The last status the thread gave (before any: nothing happened yet). */
    last: TrajectoryStatus;
  }
  const held = new Map<string, Held>();
  const replies = new Map<
    number,
    { resolve(s: TrajectoryStatus | undefined): void; reject(e: Error): void }
  >();
  const calls = new Map<number, AbortController>();
  let nextReply = 0;
  let dead: FlakegymError | undefined;
  let closing = false;
  let ready: ((m: FromGateway & { op: "ready" }) => void) | undefined;
  const send = (m: ToGateway) => thread.postMessage(m);

  const die = (why: string) => {
    if (dead || closing) return;
    dead = new FlakegymError(
      "E_GATEWAY",
      `policy gateway thread ${why}; its trajectories' model calls were cut`,
      {
        hint: "an infrastructure fault, not the policy's: the trajectories are retried",
      },
    );
    for (const h of held.values()) h.ended.abort(dead);
    for (const r of replies.values()) r.reject(dead);
    replies.clear();
    for (const c of calls.values()) c.abort(dead);
  };
  thread.on("error", (err) => die(`failed: ${err.message}`));
  thread.on("exit", (code) => die(`exited (code ${code})`));

  /** Runs a call of an upstream that lives in this thread, streaming its events back. */
  const runCall = async (callId: number, call: Parameters<PolicyUpstream["complete"]>[0]) => {
    const h = held.get(call.trajectoryId);
    const ac = new AbortController();
    calls.set(callId, ac);
    try {
      if (!h) throw new Error(`trajectory '${call.trajectoryId}' is not registered in the runner's thread`);
      for await (const event of h.upstream.complete(call, ac.signal)) {
        if (ac.signal.aborted) return;
        send({ op: "event", callId, event });
      }
      if (!ac.signal.aborted) send({ op: "end", callId });
    } catch (err) {
      if (!ac.signal.aborted) send({ op: "fail", callId, error: threadErrorOf(err) });
    } finally {
      calls.delete(callId);
    }
  };

  thread.on("message", (m: FromGateway) => {
    switch (m.op) {
      case "ready":
        ready?.(m);
        return;
      case "terminal":
        held.get(m.trajectoryId)?.ended.abort(m.terminal);
        return;
      case "reply": {
        const r = replies.get(m.reply);
        replies.delete(m.reply);
        r?.resolve(m.status);
        return;
      }
      case "call":
        void runCall(m.callId, m.call);
        return;
      case "abort":
        calls.get(m.callId)?.abort(new Error("the gateway ended the call"));
        return;
    }
  });

  /** Sends a request and waits (bounded) for the thread's reply. */
  const ask = async (
    m: (reply: number) => ToGateway,
    what: string,
  ): Promise<TrajectoryStatus | undefined> => {
    if (dead) throw dead;
    const reply = ++nextReply;
    using deadline = createDeadline({ timeout: { limit: `gateway thread ${what}`, ms: REPLY_MS } });
    return await new Promise<TrajectoryStatus | undefined>((resolve, reject) => {
      const onTimeout = () => {
        replies.delete(reply);
        reject(
          new FlakegymError(
            "E_GATEWAY",
            `policy gateway thread did not answer ${what} within ${REPLY_MS} ms`,
          ),
        );
      };
      deadline.signal.addEventListener("abort", onTimeout, { once: true });
      replies.set(reply, {
        resolve: (s) => {
          deadline.signal.removeEventListener("abort", onTimeout);
          resolve(s);
        },
        reject: (e) => {
          deadline.signal.removeEventListener("abort", onTimeout);
          reject(e);
        },
      });
      send(m(reply));
    });
  };

  /** The thread's current status of a trajectory; the last one known if it does not answer in time. */
  const statusNow = (trajectoryId: string, h: Held): TrajectoryStatus => {
    if (dead || !held.has(trajectoryId)) return h.last;
    const reply = ++nextReply;
    Atomics.store(flag, 0, 0);
    send({ op: "status", trajectoryId, reply });
    Atomics.wait(flag, 0, 0, SYNC_MS);
    for (let m = receiveMessageOnPort(sync.port1); m; m = receiveMessageOnPort(sync.port1)) {
      const answer = m.message as SyncAnswer;
      if (answer.reply === reply) h.last = answer.status ?? h.last;
    }
    return h.last;
  };

  using starting = createDeadline({
    signals: [opts.signal],
    timeout: { limit: "gateway thread start", ms: READY_MS },
  });
  let started: FromGateway & { op: "ready" };
  try {
    started = await new Promise((resolve, reject) => {
      ready = resolve;
      const onExit = (code: number) => reject(new Error(`exited (code ${code}) before it listened`));
      thread.once("exit", onExit);
      thread.once("error", reject);
      starting.signal.addEventListener("abort", () => reject(starting.signal.reason), { once: true });
    });
  } catch (err) {
    closing = true;
    await thread.terminate();
    throw new FlakegymError("E_GATEWAY", `policy gateway thread could not start: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const { origin, socketPath } = started;

  const register = (trajectoryId: string, r: RegisterOptions): TrajectoryRoute => {
    if (dead) throw dead;
    checkRegistration(trajectoryId, held.has(trajectoryId), r.limits);
    const token = r.token ?? newTrajectoryToken();
    runSecrets.add(token);
    for (const secret of r.upstream.secrets) runSecrets.add(secret);
    const h: Held = {
      upstream: r.upstream,
      ended: new AbortController(),
      last: {
        trajectoryId,
        upstream: r.upstream.id,
        requests: 0,
        ok: 0,
        failed: 0,
        refused: 0,
        inFlight: 0,
        promptTokens: 0,
        completionTokens: 0,
        terminal: undefined,
      },
    };
    held.set(trajectoryId, h);
    send({
      op: "register",
      trajectoryId,
      token,
      upstream: r.upstream.portable
        ? { portable: r.upstream.portable }
        : { proxy: { id: r.upstream.id, kind: r.upstream.kind, secrets: r.upstream.secrets } },
      limits: r.limits,
      turnLogPath: r.turnLogPath,
      sampling: r.sampling,
      secrets: runSecrets.values(),
    });
    const { path, baseUrlsFor } = routePaths(trajectoryId);
    return {
      trajectoryId,
      token,
      path,
      openaiBaseUrl: origin ? baseUrlsFor(origin).openai : undefined,
      anthropicBaseUrl: origin ? baseUrlsFor(origin).anthropic : undefined,
      baseUrlsFor,
      signal: h.ended.signal,
      status: () => statusNow(trajectoryId, h),
    };
  };

  const unregister = async (trajectoryId: string): Promise<TrajectoryStatus | undefined> => {
    const h = held.get(trajectoryId);
    if (!h) return undefined;
    try {
      h.last =
        (await ask((reply) => ({ op: "unregister", trajectoryId, reply }), `unregister '${trajectoryId}'`)) ??
        h.last;
    } finally {
      held.delete(trajectoryId);
    }
    return h.last;
  };

  // one close, however many ask for it: the run's abort and the runner's own close both do, and a
  // second close asked while the first waited went to a thread the first then terminated
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      if (closing) return;
      try {
        if (!dead) await ask((reply) => ({ op: "close", reply }), "close");
      } finally {
        closing = true;
        held.clear();
        await thread.terminate();
      }
    })();
    return closed;
  };
  opts.signal?.addEventListener("abort", () => void close().catch(() => undefined), { once: true });

  return {
    thread,
    origin,
    socketPath,
    register,
    unregister,
    status: (id) => {
      const h = held.get(id);
      return h ? statusNow(id, h) : undefined;
    },
    close,
  };
}
