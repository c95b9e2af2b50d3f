import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { MessageChannel, type MessagePort, receiveMessageOnPort, Worker } from "node:worker_threads";
import { createDeadline } from "@flakegym/nomad-jobs";
import { FlakegymError, UsageError } from "../errors.js";
import { type PolicyUpstream, UpstreamError } from "../policy/upstream.js";
import { runSecrets } from "../redact/redactor.js";
import type {
  FromGateway,
  SyncAnswer,
  ThreadError,
  ThreadInit,
  ThreadUpstream,
  ToGateway,
} from "./thread-protocol.js";
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

/** A trajectory as the runner's thread holds it. */
interface Held {
  readonly upstream: PolicyUpstream;
  readonly ended: AbortController;
  /** The last status the thread gave (before any: nothing happened yet). */
  last: TrajectoryStatus;
}

type ReadyMessage = FromGateway & { op: "ready" };

/** What the runner's side of one gateway thread holds, shared by its functions. */
interface ThreadState {
  readonly thread: Worker;
  /** The runner's end of the channel `status` answers cross synchronously. */
  readonly syncPort: MessagePort;
  /** `[0]` is set by the thread when a synchronous answer is on `syncPort`. */
  readonly flag: Int32Array;
  readonly held: Map<string, Held>;
  /** The control calls waiting for the thread's reply, by reply number. */
  readonly replies: Map<number, { resolve(s: TrajectoryStatus | undefined): void; reject(e: Error): void }>;
  /** The calls of upstreams held in this thread, running for the gateway's thread, by call id. */
  readonly calls: Map<number, AbortController>;
  nextReply: number;
  /** Set once the thread failed or exited unasked: every route aborted, every control call fails with it. */
  dead: FlakegymError | undefined;
  closing: boolean;
  ready: ((m: ReadyMessage) => void) | undefined;
  /** The one close, however many ask for it. */
  closed: Promise<void> | undefined;
}

/**
 * The worker source: the CLI bundle's own `thread-worker.js` when this process runs from it
 * (bin/compiled-bundle.mjs says where), TypeScript from a checkout (through tsx's loader) otherwise,
 * JavaScript when built.
 */
function workerScript(): URL {
  const dir = (globalThis as Record<symbol, unknown>)[Symbol.for("flakegym.bundle-dir")];
  const bundled = typeof dir === "string" ? join(dir, "thread-worker.js") : undefined;
  const choice = workerSource(
    import.meta.url,
    bundled !== undefined && existsSync(bundled) ? bundled : undefined,
  );
  if (choice.kind !== "tsx") return choice.url;
  // from a bundle without its worker this resolves from the bundle's dir, which lies inside the
  // install's node_modules for that reason
  const tsx = import.meta.resolve("tsx/esm/api");
  const code = `const { register } = await import(${JSON.stringify(tsx)}); register(); await import(${JSON.stringify(choice.url.href)});`;
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}

/**
 * Where the gateway thread's code comes from (pure): the bundle's worker file when there is one,
 * else the module beside `selfUrl` — JavaScript as is, TypeScript through tsx's loader.
 */
export function workerSource(
  selfUrl: string,
  bundledWorker: string | undefined,
): { kind: "bundle" | "js" | "tsx"; url: URL } {
  if (bundledWorker !== undefined) return { kind: "bundle", url: pathToFileURL(bundledWorker) };
  const ts = selfUrl.endsWith(".ts");
  return { kind: ts ? "tsx" : "js", url: new URL(`./thread-worker${ts ? ".ts" : ".js"}`, selfUrl) };
}

/** An error that crosses to the gateway thread (pure). */
export function threadErrorOf(err: unknown): ThreadError {
  const message = err instanceof Error ? err.message : String(err);
  return err instanceof UpstreamError
    ? { message, upstream: { status: err.status, terminal: err.terminal } }
    : { message };
}

/** Where a trajectory's calls go (pure): rebuilt in the gateway's thread when portable, else back here. */
export function threadUpstreamOf(u: PolicyUpstream): ThreadUpstream {
  return u.portable ? { portable: u.portable } : { proxy: { id: u.id, kind: u.kind, secrets: u.secrets } };
}

/** A registered trajectory's status before the thread has said anything of it (pure). */
export function initialStatus(trajectoryId: string, upstream: string): TrajectoryStatus {
  return {
    trajectoryId,
    upstream,
    requests: 0,
    ok: 0,
    failed: 0,
    refused: 0,
    inFlight: 0,
    promptTokens: 0,
    completionTokens: 0,
    terminal: undefined,
    lastAnswered: undefined,
  };
}

/** The error every trajectory and control call fails with once the thread is gone (pure): an infra fault. */
export function threadDeathError(why: string): FlakegymError {
  return new FlakegymError(
    "E_GATEWAY",
    `policy gateway thread ${why}; its trajectories' model calls were cut`,
    {
      hint: "an infrastructure fault, not the policy's: the trajectories are retried",
    },
  );
}

/** The status a synchronous answer brings (pure): only the answer to this request counts. */
export function statusFromAnswers(
  answers: readonly SyncAnswer[],
  reply: number,
  last: TrajectoryStatus,
): TrajectoryStatus {
  let status = last;
  for (const a of answers) if (a.reply === reply) status = a.status ?? status;
  return status;
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
  const st = spawnThread(opts);
  st.thread.on("error", (err) => die(st, `failed: ${err.message}`));
  st.thread.on("exit", (code) => die(st, `exited (code ${code})`));
  st.thread.on("message", (m: FromGateway) => onMessage(st, m));
  const { origin, socketPath } = await awaitReady(st, opts.signal);
  const close = () => closeThread(st);
  opts.signal?.addEventListener("abort", () => void close().catch(() => undefined), { once: true });
  return {
    thread: st.thread,
    origin,
    socketPath,
    register: (id, r) => register(st, origin, id, r),
    unregister: (id) => unregister(st, id),
    status: (id) => {
      const h = st.held.get(id);
      return h ? statusNow(st, id, h) : undefined;
    },
    close,
  };
}

/** Starts the thread with its listen addresses, limits, secrets and the synchronous channel. */
function spawnThread(opts: PolicyGatewayOptions): ThreadState {
  const listen = (Array.isArray(opts.listen) ? opts.listen : [opts.listen]) as ListenSpec[];
  const sync = new MessageChannel();
  const syncFlag = new SharedArrayBuffer(4);
  const init: ThreadInit & { syncPort: MessageChannel["port2"] } = {
    listen,
    maxBodyBytes: opts.maxBodyBytes,
    maxCallsPerTrajectory: opts.maxCallsPerTrajectory,
    measureRunTime: opts.measureRunTime,
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
  return {
    thread,
    syncPort: sync.port1,
    flag: new Int32Array(syncFlag),
    held: new Map(),
    replies: new Map(),
    calls: new Map(),
    nextReply: 0,
    dead: undefined,
    closing: false,
    ready: undefined,
    closed: undefined,
  };
}

const send = (st: ThreadState, m: ToGateway) => st.thread.postMessage(m);

/** The thread failed or exited unasked: every route aborts, every waiting control call and held call fails. */
function die(st: ThreadState, why: string): void {
  if (st.dead || st.closing) return;
  const dead = threadDeathError(why);
  st.dead = dead;
  for (const h of st.held.values()) h.ended.abort(dead);
  for (const r of st.replies.values()) r.reject(dead);
  st.replies.clear();
  for (const c of st.calls.values()) c.abort(dead);
}

function onMessage(st: ThreadState, m: FromGateway): void {
  switch (m.op) {
    case "ready":
      st.ready?.(m);
      return;
    case "terminal":
      st.held.get(m.trajectoryId)?.ended.abort(m.terminal);
      return;
    case "reply": {
      const r = st.replies.get(m.reply);
      st.replies.delete(m.reply);
      r?.resolve(m.status);
      return;
    }
    case "call":
      void runCall(st, m.callId, m.call);
      return;
    case "abort":
      st.calls.get(m.callId)?.abort(new Error("the gateway ended the call"));
      return;
  }
}

/** Runs a call of an upstream that lives in this thread, streaming its events back. */
async function runCall(
  st: ThreadState,
  callId: number,
  call: Parameters<PolicyUpstream["complete"]>[0],
): Promise<void> {
  const h = st.held.get(call.trajectoryId);
  const ac = new AbortController();
  st.calls.set(callId, ac);
  try {
    if (!h) throw new Error(`trajectory '${call.trajectoryId}' is not registered in the runner's thread`);
    for await (const event of h.upstream.complete(call, ac.signal)) {
      if (ac.signal.aborted) return;
      send(st, { op: "event", callId, event });
    }
    if (!ac.signal.aborted) send(st, { op: "end", callId });
  } catch (err) {
    if (!ac.signal.aborted) send(st, { op: "fail", callId, error: threadErrorOf(err) });
  } finally {
    st.calls.delete(callId);
  }
}

/** Sends a request and waits (bounded) for the thread's reply. */
async function ask(
  st: ThreadState,
  m: (reply: number) => ToGateway,
  what: string,
): Promise<TrajectoryStatus | undefined> {
  if (st.dead) throw st.dead;
  const reply = ++st.nextReply;
  using deadline = createDeadline({ timeout: { limit: `gateway thread ${what}`, ms: REPLY_MS } });
  return await new Promise<TrajectoryStatus | undefined>((resolve, reject) => {
    const onTimeout = () => {
      st.replies.delete(reply);
      reject(
        new FlakegymError("E_GATEWAY", `policy gateway thread did not answer ${what} within ${REPLY_MS} ms`),
      );
    };
    deadline.signal.addEventListener("abort", onTimeout, { once: true });
    st.replies.set(reply, {
      resolve: (s) => {
        deadline.signal.removeEventListener("abort", onTimeout);
        resolve(s);
      },
      reject: (e) => {
        deadline.signal.removeEventListener("abort", onTimeout);
        reject(e);
      },
    });
    send(st, m(reply));
  });
}

/** The thread's current status of a trajectory; the last one known if it does not answer in time. */
function statusNow(st: ThreadState, trajectoryId: string, h: Held): TrajectoryStatus {
  if (st.dead || !st.held.has(trajectoryId)) return h.last;
  const reply = ++st.nextReply;
  Atomics.store(st.flag, 0, 0);
  send(st, { op: "status", trajectoryId, reply });
  Atomics.wait(st.flag, 0, 0, SYNC_MS);
  const answers: SyncAnswer[] = [];
  for (let m = receiveMessageOnPort(st.syncPort); m; m = receiveMessageOnPort(st.syncPort))
    answers.push(m.message as SyncAnswer);
  h.last = statusFromAnswers(answers, reply, h.last);
  return h.last;
}

/** Waits (bounded, and cut by the run's signal) for the thread to listen; a thread that cannot is terminated. */
async function awaitReady(st: ThreadState, signal: AbortSignal | undefined): Promise<ReadyMessage> {
  using starting = createDeadline({
    signals: [signal],
    timeout: { limit: "gateway thread start", ms: READY_MS },
  });
  try {
    return await new Promise<ReadyMessage>((resolve, reject) => {
      st.ready = resolve;
      const onExit = (code: number) => reject(new Error(`exited (code ${code}) before it listened`));
      st.thread.once("exit", onExit);
      st.thread.once("error", reject);
      starting.signal.addEventListener("abort", () => reject(starting.signal.reason), { once: true });
    });
  } catch (err) {
    st.closing = true;
    await st.thread.terminate();
    throw new FlakegymError("E_GATEWAY", `policy gateway thread could not start: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

function register(
  st: ThreadState,
  origin: string | undefined,
  trajectoryId: string,
  r: RegisterOptions,
): TrajectoryRoute {
  if (st.dead) throw st.dead;
  checkRegistration(trajectoryId, st.held.has(trajectoryId), r.limits);
  const token = r.token ?? newTrajectoryToken();
  runSecrets.add(token);
  for (const secret of r.upstream.secrets) runSecrets.add(secret);
  const h: Held = {
    upstream: r.upstream,
    ended: new AbortController(),
    last: initialStatus(trajectoryId, r.upstream.id),
  };
  st.held.set(trajectoryId, h);
  send(st, {
    op: "register",
    trajectoryId,
    token,
    upstream: threadUpstreamOf(r.upstream),
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
    status: () => statusNow(st, trajectoryId, h),
  };
}

async function unregister(st: ThreadState, trajectoryId: string): Promise<TrajectoryStatus | undefined> {
  const h = st.held.get(trajectoryId);
  if (!h) return undefined;
  try {
    h.last =
      (await ask(
        st,
        (reply) => ({ op: "unregister", trajectoryId, reply }),
        `unregister '${trajectoryId}'`,
      )) ?? h.last;
  } finally {
    st.held.delete(trajectoryId);
  }
  return h.last;
}

/**
 * Closes once, however many ask for it: the run's abort and the runner's own close both do, and a
 * second close asked while the first waited went to a thread the first then terminated.
 */
function closeThread(st: ThreadState): Promise<void> {
  st.closed ??= (async () => {
    if (st.closing) return;
    try {
      if (!st.dead) await ask(st, (reply) => ({ op: "close", reply }), "close");
    } finally {
      st.closing = true;
      st.held.clear();
      await st.thread.terminate();
    }
  })();
  return st.closed;
}
