import { filesystemFull, fsEnforcesQuota, removeWorkerDir, unboundedDiskOver } from "../bounded-dirs.js";
import { execTimeoutMs, stoppedExecResult } from "../exec-budget.js";
import { exitWithin } from "../exit-within.js";
import { type FreezeEvidence, wallClockExitOf } from "../frozen-verdict.js";
import { collectHostArtifacts } from "../host-artifacts.js";
import { execLimitOf } from "../limit-verdict.js";
import { type CgroupDirs, cgroupDirsAt, readLimitEvents, readUsage } from "../local/cgroup.js";
import { cpuOverOf, diskCheckDue, memoryExitOf } from "../local/decisions.js";
import type {
  CollectArtifactsInput,
  ExecOptions,
  ExecResult,
  Worker,
  WorkerExit,
  WorkerSpec,
} from "../types.js";
import { type PodmanState, pm, removeContainer } from "./backend-state.js";
import { conmonOomMarkerIn, containerExitOf, killedFromOutside, parseExitState } from "./container-exit.js";
import { containerFreeze, frozenContainerExit } from "./container-frozen.js";
import type { HostDirs } from "./host-dirs.js";
import { podmanExecArgs } from "./run-args.js";

/** An agent worker's core, as start-agent.ts hands it over. */
export interface PodmanAgent {
  readonly address: string;
  readonly policyBaseUrl: string;
  readonly configDir: string;
  stop(): Promise<void>;
  readonly exited: Promise<unknown>;
  /** ms since the supervisor's last heartbeat (workers/frozen-verdict.ts). */
  heartbeatAgeMs(): number | undefined;
}

/**
 * One podman worker's state, shared by the functions below: its container, host dirs and cgroup,
 * how it ended (once), and the watchdog's bookkeeping.
 */
interface PodmanWorkerState {
  readonly st: PodmanState;
  readonly spec: WorkerSpec;
  readonly name: string;
  readonly host: HostDirs;
  readonly agent: PodmanAgent | undefined;
  readonly cgroup: CgroupDirs | undefined;
  /** The workspace's filesystem enforces the disk limit itself. */
  readonly quotaByFs: boolean;
  /** OOM kills the cgroup had counted when the worker started. */
  readonly initialOom: number;
  readonly startedAt: number;
  readonly exited: Promise<WorkerExit>;
  readonly resolveExit: (e: WorkerExit) => void;
  exit: WorkerExit | undefined;
  /** The container ended on its own by a kill from outside (exec-only workers: exec-only-init.ts). */
  outsideKill: boolean;
  stopping: Promise<void> | undefined;
  timers: { wall?: NodeJS.Timeout; watchdog?: NodeJS.Timeout };
  checking: boolean;
  lastDiskCheck: number;
}

/** The wall clock's end: frozen when the container is frozen from outside now (frozen-verdict.ts), else the limit. */
async function wallClockExit(w: PodmanWorkerState): Promise<WorkerExit> {
  return wallClockExitOf(await freezeEvidenceNow(w), w.spec.limits.wallClockMs);
}

/** The container's freeze now, with its supervisor's heartbeat (an agent's only; PID 1 is its supervisor). */
async function freezeEvidenceNow(w: PodmanWorkerState): Promise<FreezeEvidence> {
  const outsideFreeze = w.agent ? await containerFreeze(w.st, w.name).catch(() => undefined) : undefined;
  return { heartbeatAgeMs: w.agent?.heartbeatAgeMs(), outsideFreeze };
}

/** Ends the worker once: timers, the core, the container, then its host dir (config, sockets, HOME, /tmp). */
function endWorker(w: PodmanWorkerState, e: WorkerExit): Promise<void> {
  if (w.stopping) return w.stopping;
  w.exit = e;
  w.stopping = (async () => {
    clearTimeout(w.timers.wall);
    clearInterval(w.timers.watchdog);
    await w.agent?.stop().catch(() => {});
    await removeContainer(w.st, w.name);
    await removeWorkerDir(w.host.dir, w.host.dirs).catch(() => {});
    w.resolveExit(e);
  })();
  return w.stopping;
}

/** One watchdog tick: the container's CPU time (all its processes), OOM kills and what no filesystem bounds. */
async function watchdogTick(w: PodmanWorkerState, interval: number): Promise<void> {
  if (w.checking || w.exit) return;
  w.checking = true;
  try {
    const frozen = w.agent ? await frozenContainerExit(w.st, w.name, w.agent.heartbeatAgeMs()) : undefined;
    if (frozen) {
      await endWorker(w, frozen);
      return;
    }
    const usage = w.cgroup ? await readUsage(w.cgroup) : undefined;
    const cpu = cpuOverOf({ assigned: true, usage, cpuBaseUsec: 0, limits: w.spec.limits });
    if (cpu) {
      await endWorker(w, cpu);
      return;
    }
    if (w.cgroup && (await readLimitEvents(w.cgroup)).oomKills > w.initialOom) {
      await endWorker(w, memoryExitOf(w.spec.limits));
      return;
    }
    if (diskCheckDue(true, Date.now(), w.lastDiskCheck, interval)) {
      w.lastDiskCheck = Date.now();
      const over = await unboundedDiskOver(w.spec, w.quotaByFs, w.host.dirs);
      if (over) await endWorker(w, { reason: "disk", detail: over });
    }
  } finally {
    w.checking = false;
  }
}

/**
 * The container ending on its own (OOM of PID 1, killed from outside) ends the worker, for the
 * reason its own exit facts give: podman's OOMKilled, the cgroup's OOM kill count or conmon's OOM
 * marker (runc may remove the cgroup, or podman miss the kill, before this reads them). An
 * exec-only container's init ends only by a kill from outside: that is remembered, so an exec it cut
 * short is the machinery's loss (retried), not the code under test's doing.
 */
async function endedOnItsOwn(w: PodmanWorkerState): Promise<void> {
  if (w.exit) return;
  const state = parseExitState(
    (await pm(w.st, ["inspect", "--format", "{{.State.OOMKilled}} {{.State.ExitCode}}", w.name])).stdout,
  );
  const events = w.cgroup ? await readLimitEvents(w.cgroup).catch(() => undefined) : undefined;
  const facts = {
    ...state,
    oomKills: events ? events.oomKills - w.initialOom : undefined,
    conmonOomMarker: await conmonOomMarkerIn(w.host.dir),
    memoryMb: w.spec.limits.memoryMb,
  };
  if (w.exit) return; // ended by us (stop, a limit) while the facts were read
  w.outsideKill = !w.agent && killedFromOutside(facts);
  void endWorker(w, containerExitOf(facts));
}

/** After an exec ended abnormally: whether its container was killed from outside meanwhile (bounded wait). */
async function lostFromOutside(w: PodmanWorkerState): Promise<boolean> {
  if (w.agent) return false;
  if (!w.exit) {
    const running = await pm(w.st, ["inspect", "--format", "{{.State.Running}}", w.name]);
    if (running.exitCode === 0 && running.stdout.trim() === "true") return false;
  }
  await exitWithin(w, 30_000, "the podman worker's end after its container stopped");
  return w.outsideKill;
}

/** Runs one command with `podman exec`, bounded by the exec's timeout and the worker's wall clock. */
async function execIn(w: PodmanWorkerState, command: string, o: ExecOptions): Promise<ExecResult> {
  if (w.exit)
    return { ...stoppedExecResult(w.name, w.exit.reason), ...(w.outsideKill ? { sandboxKilled: true } : {}) };
  const none = { oomKills: 0, pidsRejected: 0 };
  const before = w.cgroup ? await readLimitEvents(w.cgroup) : none;
  const timeoutMs = execTimeoutMs(w.spec, w.startedAt, o.timeoutMs);
  const started = performance.now();
  const r = await pm(w.st, podmanExecArgs(w.spec, w.name, command, o, timeoutMs), {
    timeoutMs: timeoutMs + 10_000,
    cwd: w.host.dir,
    ...(o.signal ? { signal: o.signal } : {}),
  });
  // cut by our own bound (the in-container `timeout` could not fire: a paused container): podman
  // exits 0 on the SIGTERM, which is no success
  const code = r.timedOut ? 137 : (r.exitCode ?? 137);
  const durationMs = Math.round(performance.now() - started);
  // the worker may have ended while the command ran (its wall clock, a limit, its container)
  const ended = (w.exit as WorkerExit | undefined)?.reason;
  const timedOut = r.timedOut || (code === 137 && durationMs >= timeoutMs - 50) || ended === "wall_clock";
  const after = w.cgroup ? await readLimitEvents(w.cgroup) : none;
  const limit = execLimitOf({
    exitCode: code,
    timedOut,
    ...(ended ? { workerExit: ended } : {}),
    oomKills: after.oomKills - before.oomKills,
    pidsRejected: after.pidsRejected - before.pidsRejected,
    diskFull: code !== 0 && (await diskFull(w)),
  });
  const sandboxKilled = code !== 0 && !timedOut && !o.signal?.aborted && (await lostFromOutside(w));
  // cut at its deadline in a container frozen from outside (paused): the machine's, not the code's
  const sandboxStopped = timedOut && !ended && (await containerFreeze(w.st, w.name)) !== undefined;
  return {
    exitCode: code,
    stdout: r.stdout,
    stderr: r.stderr,
    timedOut,
    durationMs,
    ...(limit ? { limit } : {}),
    ...(sandboxKilled ? { sandboxKilled: true } : {}),
    ...(sandboxStopped ? { sandboxStopped: true } : {}),
  };
}

/** Whether one of the worker's bounded filesystems (the workspace's quota, its state tmpfs) is full. */
async function diskFull(w: PodmanWorkerState): Promise<boolean> {
  return (
    (w.quotaByFs && (await filesystemFull(w.spec.workspace))) ||
    (w.host.dirs.bounded && (await filesystemFull(w.host.dirs.root)))
  );
}

/** The worker's state, read from its running container: its cgroup, the disk quota, the OOM count so far. */
async function workerState(
  st: PodmanState,
  spec: WorkerSpec,
  name: string,
  host: HostDirs,
  agent: PodmanAgent | undefined,
): Promise<PodmanWorkerState> {
  const cgroupPath = (await pm(st, ["inspect", "--format", "{{.State.CgroupPath}}", name])).stdout.trim();
  const cgroup = cgroupPath ? await cgroupDirsAt(cgroupPath) : undefined;
  const quotaByFs =
    spec.limits.diskMb !== undefined && (await fsEnforcesQuota(spec.workspace, spec.limits.diskMb));
  let resolveExit!: (e: WorkerExit) => void;
  const exited = new Promise<WorkerExit>((r) => {
    resolveExit = r;
  });
  return {
    st,
    spec,
    name,
    host,
    agent,
    cgroup,
    quotaByFs,
    initialOom: cgroup ? (await readLimitEvents(cgroup)).oomKills : 0,
    startedAt: Date.now(),
    exited,
    resolveExit,
    exit: undefined,
    outsideKill: false,
    stopping: undefined,
    timers: {},
    checking: false,
    lastDiskCheck: 0,
  };
}

/**
 * A worker over a running container: its wall clock, its watchdog, the watch on the container's
 * own end, and `exec`/`stop` (plus `collectArtifacts` for agent workers: the workspace and the
 * config dir are bind mounts of host dirs, so the core's task files and the agent's changes are
 * read and diffed on the host, like the local backend).
 */
export async function makeWorker(
  st: PodmanState,
  spec: WorkerSpec,
  name: string,
  host: HostDirs,
  agent?: PodmanAgent,
): Promise<Worker> {
  const w = await workerState(st, spec, name, host, agent);
  w.timers.wall = setTimeout(
    () => void wallClockExit(w).then((e) => endWorker(w, e)),
    spec.limits.wallClockMs,
  );
  const interval = st.options.watchdogIntervalMs ?? 1000;
  w.timers.watchdog = setInterval(() => void watchdogTick(w, interval), interval);
  void pm(st, ["wait", name], { timeoutMs: spec.limits.wallClockMs + 60_000 }).then(() => endedOnItsOwn(w));
  if (agent) void agent.exited.then(() => endedOnItsOwn(w));
  return {
    id: name,
    backend: "podman",
    ...(agent
      ? {
          agentAddress: agent.address,
          // one user in the container: the agent's commands can reach the core (classify-outcome.ts)
          agentUsers: "one" as const,
          policyBaseUrl: agent.policyBaseUrl,
          configDir: agent.configDir,
          async collectArtifacts(c: CollectArtifactsInput): Promise<void> {
            await collectHostArtifacts(
              { id: name, configDir: agent.configDir, workspace: spec.workspace },
              c,
            );
          },
        }
      : {}),
    exited: w.exited,
    exec: (command: string, o: ExecOptions = {}) => execIn(w, command, o),
    stop: () => endWorker(w, { reason: "stopped" }),
  };
}
