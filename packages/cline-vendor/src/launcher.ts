import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { AGENT_USER_ENV, AGENT_USER_NODE_ARGS, agentUserValue } from "./agent-user.js";
import { type ClineClient, createClineClient } from "./client.js";
import { CORE_GC_NODE_ARGS } from "./core-gc.js";
import { CORE_PROBES_NODE_ARGS } from "./core-probes.js";
import { buildCoreEnv } from "./env.js";
import { ClineVendorError, ErrorCode } from "./errors.js";
import type { MappedCoreDecision } from "./mapped-core.js";
import { type MemoryMergeDecision, probeMemoryMerge } from "./memory-merge.js";
import type { OneByteDecision } from "./one-byte-core.js";
import { type ClinePackage, resolveClinePackage } from "./paths.js";
import { processRssBytes } from "./proc.js";

/** Path of the plain-JS supervisor (runnable with just `node`). */
export const SUPERVISOR_PATH = fileURLToPath(new URL("../supervisor/cline-supervisor.mjs", import.meta.url));

/** A command line the launcher is about to spawn; `wrap` may rewrite it (e.g. prefix `bwrap …`). */
export interface LaunchCommand {
  readonly command: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

/** Where the core's gRPC server listens. */
export type CoreListen = { readonly kind: "tcp" } | { readonly kind: "unix"; readonly path: string };

export interface LaunchOptions {
  /** The directory the agent works in (must exist). */
  readonly workspace: string;
  /** The core's config dir (`--config`): settings, secrets, task artifacts, core.log. Created if missing. */
  readonly configDir: string;
  /** HOME of the core and the agent's commands (Cline creates `$HOME/Cline/...`). Created if missing. */
  readonly home: string;
  /** Extra environment on top of the allow-list (credential-like names are refused). */
  readonly env?: Readonly<Record<string, string>>;
  /** Aborting it cancels the start, or stops a started core. */
  readonly signal?: AbortSignal;
  /** Bound on spawn → first successful gRPC call. Default 60 s. */
  readonly startTimeoutMs?: number;
  /** tcp (default): a free port on 127.0.0.1; unix: the core binds this socket path itself. */
  readonly listen?: CoreListen;
  /** Rewrites the supervisor command (sandboxing). Paths inside must match the outside ones. */
  readonly wrap?: (cmd: LaunchCommand) => LaunchCommand;
  /** SIGTERM → SIGKILL grace for stop(). Default 3 s. */
  readonly stopGraceMs?: number;
  /** Extra supervisor flags, e.g. `["--forward", "127.0.0.1:4000=unix:/run/gw.sock"]`. */
  readonly supervisorArgs?: readonly string[];
  /** The pinned package; default {@link resolveClinePackage}(). */
  readonly clinePackage?: ClinePackage;
  /**
   * Niceness (0–19) of the supervisor and everything under it (host, core, the agent's commands),
   * so the caller and its gateway go first on a busy machine. Default: the caller's own.
   */
  readonly nice?: number;
  /**
   * Same-page merging for the core (memory-merge.ts). Default: on where the kernel runs it, unless
   * FLAKEGYM_CORE_MEMORY_MERGE=0. `false` starts the core as before.
   */
  readonly memoryMerge?: boolean;
  /**
   * The core's bundle as a one-byte string (one-byte-core.ts: `probeOneByteCore`); when `on`, the
   * core runs `coreJs` from that directory (a sandbox must bind it). Default: the package's own bundle.
   */
  readonly oneByte?: OneByteDecision;
  /**
   * Load core-gc.cjs into the core, so a full garbage collection can be asked for
   * (core-gc.ts; a reused worker's reset does). Default false.
   */
  readonly gcOnSignal?: boolean;
  /**
   * Load core-probes-install.cjs into the core: its `which` and documents-dir probes are answered
   * in its own process where the answer is provably the real one (core-probes.ts). Default false.
   */
  readonly answerProbes?: boolean;
  /**
   * Run every process the core starts (the agent's commands) as this user (agent-user.ts): the
   * core must hold CAP_SETUID/CAP_SETGID where it runs (a sandbox of two users). Default: the core's own.
   */
  readonly agentUser?: { readonly uid: number; readonly gid: number };
  /**
   * Load `<dir>/core-memory.cjs` (mapped-core.ts: `probeMappedCore`): the core compiles its bundle
   * from the one-byte text mapped read-only, shared by every core, and core-gc.cjs's collection
   * gives free pages back. Needs `oneByte` on (a sandbox must bind the directory). Default off.
   */
  readonly mappedCore?: MappedCoreDecision;
}

/** A running core (host + core under one supervisor, in one process group). */
export interface ClineCore {
  /** gRPC target: `127.0.0.1:<port>` or `unix:/path`. */
  readonly address: string;
  readonly configDir: string;
  readonly home: string;
  readonly workspace: string;
  /** pid of the spawned process (the supervisor, or the wrapper); it leads the process group. */
  readonly pid: number;
  /** pids as the supervisor sees them (inside a pid namespace they differ from the host's). */
  readonly childPids: { readonly supervisor: number; readonly host: number; readonly core: number };
  /** File both children's output is appended to (the core logs its environment there). */
  readonly logFile: string;
  readonly client: ClineClient;
  readonly timings: { readonly bootMs: number };
  /** Whether the core runs with same-page merging, or why not. */
  readonly memoryMerge: MemoryMergeDecision;
  /** Whether the core runs the one-byte bundle, or why not. */
  readonly oneByte: OneByteDecision;
  /**
   * Resident memory of the core and host processes (Linux; undefined when wrapped, since pids
   * inside a sandbox's pid namespace are not the host's).
   */
  memory(): Promise<{ coreRssBytes?: number; hostRssBytes?: number }>;
  /** Resolves when the supervisor has exited (for whatever reason). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * How long ago (ms) the supervisor's last heartbeat was read (it sends one a second, apart from
   * anything the agent does); undefined when none came yet.
   */
  heartbeatAgeMs(): number | undefined;
  /** Flushes pending state (best effort), then SIGTERM → SIGKILL the process group. Idempotent. */
  stop(): Promise<void>;
}

interface SupervisorEvent {
  event: string;
  [key: string]: unknown;
}

function tailOf(file: string, bytes = 4000): string {
  try {
    const size = statSync(file).size;
    const buf = readFileSync(file);
    return buf.subarray(Math.max(0, size - bytes)).toString("utf8");
  } catch {
    return "(no core log)";
  }
}

function killGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

/** What a launch resolved before spawning: absolute paths, the pinned package, the decisions. */
interface LaunchPlan {
  readonly options: LaunchOptions;
  readonly t0: number;
  readonly pkg: ClinePackage;
  readonly workspace: string;
  readonly configDir: string;
  readonly home: string;
  readonly logFile: string;
  readonly startTimeoutMs: number;
  readonly memoryMerge: MemoryMergeDecision;
  readonly oneByte: OneByteDecision;
  readonly cmd: LaunchCommand;
}

/** The supervisor's command line (after the node binary), pure. */
export function supervisorArgv(a: {
  readonly pkg: Pick<ClinePackage, "hostBinary" | "coreJs" | "nodeModules" | "fakeNodeModules">;
  readonly workspace: string;
  readonly configDir: string;
  readonly logFile: string;
  readonly listen: CoreListen;
  readonly stopGraceMs: number;
  readonly nice: number | undefined;
  readonly memoryMerge: MemoryMergeDecision;
  readonly oneByte: OneByteDecision;
  readonly extra: readonly string[];
  readonly node: string;
  readonly gcOnSignal?: boolean;
  readonly answerProbes?: boolean;
  readonly agentUser?: boolean;
  readonly mappedCore?: MappedCoreDecision;
}): string[] {
  return [
    SUPERVISOR_PATH,
    "--host-bin",
    a.pkg.hostBinary,
    "--core-js",
    a.oneByte.on ? a.oneByte.coreJs : a.pkg.coreJs,
    "--node-path",
    `${a.pkg.nodeModules}:${a.pkg.fakeNodeModules}`,
    "--workspace",
    a.workspace,
    "--config",
    a.configDir,
    "--log",
    a.logFile,
    "--core-address",
    a.listen.kind === "unix" ? `unix:${resolve(a.listen.path)}` : "127.0.0.1:0",
    "--grace-ms",
    String(Math.max(0, a.stopGraceMs - 500)),
    "--node",
    a.node,
    "--watch-stdin",
    ...(a.nice !== undefined ? ["--nice", String(a.nice)] : []),
    ...(a.memoryMerge.on ? a.memoryMerge.prefix.flatMap((x) => ["--core-prefix", x]) : []),
    ...(a.gcOnSignal ? CORE_GC_NODE_ARGS.flatMap((x) => ["--core-node-arg", x]) : []),
    ...(a.answerProbes ? CORE_PROBES_NODE_ARGS.flatMap((x) => ["--core-node-arg", x]) : []),
    ...(a.agentUser ? AGENT_USER_NODE_ARGS.flatMap((x) => ["--core-node-arg", x]) : []),
    ...(a.mappedCore?.on && a.oneByte.on
      ? ["--core-node-arg", "--require", "--core-node-arg", a.mappedCore.preload]
      : []),
    ...a.extra,
  ];
}

/** Checks the workspace, creates the config and home dirs, and builds the (wrapped) command. */
async function planLaunch(options: LaunchOptions): Promise<LaunchPlan> {
  const t0 = performance.now();
  const pkg = options.clinePackage ?? resolveClinePackage();
  const workspace = resolve(options.workspace);
  const configDir = resolve(options.configDir);
  const home = resolve(options.home);
  if (!existsSync(workspace) || !statSync(workspace).isDirectory())
    throw new ClineVendorError(ErrorCode.InvalidArgument, `workspace ${workspace} is not a directory`, {
      hint: "create the workspace before launching the core",
    });
  await Promise.all([mkdir(configDir, { recursive: true }), mkdir(home, { recursive: true })]);
  const logFile = join(configDir, "core.log");
  const env = buildCoreEnv(process.env, home, options.env);
  if (options.agentUser) env[AGENT_USER_ENV] = agentUserValue(options.agentUser.uid, options.agentUser.gid);
  const memoryMerge = probeMemoryMerge(options.memoryMerge);
  const oneByte: OneByteDecision = options.oneByte ?? { on: false, reason: "not asked for by the caller" };
  const args = supervisorArgv({
    pkg,
    workspace,
    configDir,
    logFile,
    listen: options.listen ?? { kind: "tcp" },
    stopGraceMs: options.stopGraceMs ?? 3000,
    nice: options.nice,
    memoryMerge,
    oneByte,
    extra: options.supervisorArgs ?? [],
    node: process.execPath,
    gcOnSignal: options.gcOnSignal ?? false,
    answerProbes: options.answerProbes ?? false,
    agentUser: options.agentUser !== undefined,
    ...(options.mappedCore ? { mappedCore: options.mappedCore } : {}),
  });
  const cmd = (options.wrap ?? ((c) => c))({ command: process.execPath, args, env });
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  return { options, t0, pkg, workspace, configDir, home, logFile, startTimeoutMs, memoryMerge, oneByte, cmd };
}

/** A spawned supervisor as the launcher follows it: its events, its stderr, whether it exited, its client. */
interface LaunchState {
  readonly plan: LaunchPlan;
  readonly child: ChildProcess;
  readonly pid: number | undefined;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly events: SupervisorEvent[];
  /** Wakes the current wait (a new event, or the exit). */
  onEvent: (() => void) | undefined;
  spawnError: Error | undefined;
  stderrTail: string;
  exitedNow: boolean;
  client: ClineClient | undefined;
  stopping: Promise<void> | undefined;
  readonly onAbort: () => void;
  /** When the last heartbeat line was read (performance.now()); heartbeats are not kept in `events`. */
  lastHeartbeat: number | undefined;
}

/** Reads the supervisor's event lines and stderr, and lets the caller's event loop end without it. */
function follow(st: LaunchState): void {
  const { child } = st;
  child.once("error", (err) => {
    st.spawnError = err;
  });
  child.stderr?.on("data", (c: Buffer) => {
    st.stderrTail = (st.stderrTail + c.toString("utf8")).slice(-4000);
  });
  if (child.stdout) {
    createInterface({ input: child.stdout }).on("line", (line) => {
      try {
        const event = JSON.parse(line) as SupervisorEvent;
        if (event.event === "heartbeat") {
          st.lastHeartbeat = performance.now();
          return;
        }
        st.events.push(event);
        st.onEvent?.();
      } catch {
        // not an event line
      }
    });
  }
  // Do not keep the caller's event loop alive for the supervisor.
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
  (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();
  void st.exited.then(() => {
    st.exitedNow = true;
    st.onEvent?.();
  });
}

async function spawnSupervisor(plan: LaunchPlan): Promise<LaunchState> {
  // Make sure the log exists so a failed start can always show its tail.
  await (await open(plan.logFile, "a")).close();
  const child: ChildProcess = spawn(plan.cmd.command, plan.cmd.args, {
    env: plan.cmd.env,
    detached: true,
    // stdin stays an open pipe: when this process dies, the supervisor reads EOF and stops.
    stdio: ["pipe", "pipe", "pipe"],
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    child.once("exit", (code, signal) => res({ code, signal }));
  });
  const st: LaunchState = {
    plan,
    child,
    pid: child.pid,
    exited,
    events: [],
    onEvent: undefined,
    spawnError: undefined,
    stderrTail: "",
    exitedNow: false,
    client: undefined,
    stopping: undefined,
    onAbort: () => void stopCore(st),
    lastHeartbeat: undefined,
  };
  follow(st);
  return st;
}

/** Flushes pending state (best effort), then SIGTERM → SIGKILL the process group. Idempotent. */
function stopCore(st: LaunchState): Promise<void> {
  st.stopping ??= (async () => {
    st.plan.options.signal?.removeEventListener("abort", st.onAbort);
    if (st.client && !st.exitedNow) {
      try {
        await st.client.state.flushPendingState({ deadlineMs: 2000 });
      } catch {
        // best effort: the core may be busy or gone
      }
    }
    st.client?.close();
    const pid = st.pid;
    if (pid !== undefined && !st.exitedNow) {
      killGroup(pid, "SIGTERM");
      const timer = setTimeout(() => killGroup(pid, "SIGKILL"), st.plan.options.stopGraceMs ?? 3000);
      await st.exited;
      clearTimeout(timer);
      // The supervisor killed its children; make sure nothing of the group is left either.
      killGroup(pid, "SIGKILL");
    }
    st.child.stdin?.destroy();
  })();
  return st.stopping;
}

/** Stops the core and throws E_CLINE_START with the tail of core.log and the supervisor's stderr. */
async function failStart(st: LaunchState, message: string, cause?: unknown): Promise<never> {
  await stopCore(st);
  const supervisorErr = st.stderrTail.trim() ? `\n--- supervisor stderr ---\n${st.stderrTail.trim()}` : "";
  const { logFile } = st.plan;
  throw new ClineVendorError(
    ErrorCode.StartFailed,
    `${message}\n--- tail of ${logFile} ---\n${tailOf(logFile).trim()}${supervisorErr}`,
    {
      hint: "see the core log above; check that the cline package is installed (`npx flakegym doctor`)",
      cause,
    },
  );
}

/** When the caller aborted: stops the core and throws the caller's reason. */
async function throwIfCallerAborted(st: LaunchState): Promise<void> {
  const signal = st.plan.options.signal;
  if (!signal?.aborted) return;
  await stopCore(st);
  throw signal.reason;
}

/** Waits until `pred` holds (true), or the supervisor exits, fails to spawn, the caller aborts or `untilMs` passes (false). */
async function waitFor(st: LaunchState, pred: () => boolean, untilMs: number): Promise<boolean> {
  while (!pred()) {
    if (st.exitedNow || st.spawnError || st.plan.options.signal?.aborted) return false;
    const left = untilMs - Date.now();
    if (left <= 0) return false;
    await new Promise<void>((r) => {
      const t = setTimeout(r, Math.min(left, 1000));
      st.onEvent = () => {
        clearTimeout(t);
        r();
      };
    });
    st.onEvent = undefined;
  }
  return true;
}

/** Why the supervisor did not report `started`, pure. */
export function notStartedMessage(a: {
  readonly command: string;
  readonly spawnError: Error | undefined;
  readonly exited: boolean;
  readonly startTimeoutMs: number;
}): string {
  if (a.spawnError) return `could not spawn ${a.command}: ${a.spawnError.message}`;
  if (a.exited) return "the supervisor exited before starting cline-host and cline-core";
  return `the supervisor did not start the core within ${a.startTimeoutMs} ms`;
}

/** Waits for the supervisor's `started` event (then, bounded, the core's `listening`); returns `started`. */
async function waitStarted(st: LaunchState, deadline: number): Promise<SupervisorEvent> {
  const started = () => st.events.find((e) => e.event === "started");
  if (!(await waitFor(st, () => started() !== undefined, deadline))) {
    await throwIfCallerAborted(st);
    const { cmd, startTimeoutMs } = st.plan;
    const message = notStartedMessage({
      command: cmd.command,
      spawnError: st.spawnError,
      exited: st.exitedNow,
      startTimeoutMs,
    });
    return await failStart(st, message, st.spawnError);
  }
  // The core prints a line once its gRPC server is bound; wait for it (bounded), then confirm
  // with a real call. If the line never comes (log format changed), the gRPC poll still works.
  await waitFor(
    st,
    () => st.events.some((e) => e.event === "listening"),
    Math.min(deadline, Date.now() + 15_000),
  );
  await throwIfCallerAborted(st);
  if (st.exitedNow) {
    const why = st.events.find((e) => e.event === "stopping");
    return await failStart(
      st,
      `cline-host/cline-core exited while starting (${String(why?.["reason"] ?? "unknown")})`,
    );
  }
  return started()!;
}

/** Polls `getProcessInfo` until the core answers, within `deadline`. */
async function waitAnswering(
  st: LaunchState,
  client: ClineClient,
  address: string,
  deadline: number,
): Promise<void> {
  const { options, startTimeoutMs } = st.plan;
  let lastErr: unknown;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0)
      return await failStart(
        st,
        `the core at ${address} did not answer within ${startTimeoutMs} ms`,
        lastErr,
      );
    try {
      await client.state.getProcessInfo({
        deadlineMs: Math.min(left, 2000),
        waitForReady: true,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      return;
    } catch (err) {
      await throwIfCallerAborted(st);
      if (st.exitedNow) return await failStart(st, "cline-host/cline-core exited while starting", err);
      lastErr = err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** The running core's handle. */
function coreOf(st: LaunchState, info: SupervisorEvent, address: string, client: ClineClient): ClineCore {
  const { plan } = st;
  return {
    address,
    configDir: plan.configDir,
    home: plan.home,
    workspace: plan.workspace,
    pid: st.pid!,
    childPids: {
      supervisor: Number(info["supervisorPid"]),
      host: Number(info["hostPid"]),
      core: Number(info["corePid"]),
    },
    logFile: plan.logFile,
    client,
    timings: { bootMs: Math.round(performance.now() - plan.t0) },
    memoryMerge: plan.memoryMerge,
    oneByte: plan.oneByte,
    exited: st.exited,
    heartbeatAgeMs: () => (st.lastHeartbeat === undefined ? undefined : performance.now() - st.lastHeartbeat),
    async memory() {
      if (plan.options.wrap) return {};
      const [core, host] = await Promise.all([
        processRssBytes(Number(info["corePid"])),
        processRssBytes(Number(info["hostPid"])),
      ]);
      return {
        ...(core !== undefined ? { coreRssBytes: core } : {}),
        ...(host !== undefined ? { hostRssBytes: host } : {}),
      };
    },
    stop: () => stopCore(st),
  };
}

/**
 * Starts cline-host and cline-core under the supervisor and waits until the core answers a real
 * gRPC call (`StateService.getProcessInfo`). Throws E_CLINE_START (with the tail of core.log) when
 * it does not within `startTimeoutMs`, or when the processes die while starting.
 */
export async function launchClineCore(options: LaunchOptions): Promise<ClineCore> {
  const plan = await planLaunch(options);
  options.signal?.throwIfAborted();
  const st = await spawnSupervisor(plan);
  const deadline = Date.now() + plan.startTimeoutMs;
  if (options.signal) options.signal.addEventListener("abort", st.onAbort, { once: true });
  try {
    const info = await waitStarted(st, deadline);
    const address = String(info["coreAddress"]);
    const client = createClineClient({ address, descriptorSet: plan.pkg.descriptorSet });
    st.client = client;
    await waitAnswering(st, client, address, deadline);
    return coreOf(st, info, address, client);
  } catch (err) {
    await stopCore(st);
    throw err;
  }
}
