import { FlakegymError } from "../../errors.js";
import type { BoundedDirs } from "../bounded-dirs.js";
import { wallClockExitOf } from "../frozen-verdict.js";
import type { ResourceLimits, WorkerExit, WorkerSpec } from "../types.js";
import type { AgentLauncher, RunningAgent } from "./agent.js";
import { freezeEvidenceOf } from "./freeze-evidence.js";
import type { LocalBackendOptions } from "./local-backend.js";
import { releaseSlot, type Slot } from "./pool-slot.js";
import type { Pristine } from "./pristine.js";
import type { PreparedShape } from "./shape.js";

/** What one local backend holds, shared by its functions (local-backend.ts, open-worker.ts). */
export interface LocalBackendState {
  readonly options: LocalBackendOptions;
  /** Parent of the per-worker state dirs. */
  readonly root: string;
  readonly agentLauncher: AgentLauncher;
  /** Whether pooled workers can adopt a workspace here (probed once). */
  poolProbe: Promise<string | undefined> | undefined;
}

/** What a local worker is made of before anything runs in it. */
export interface LocalWorkerParts {
  readonly id: string;
  /** The spec it was opened with (a pooled worker's template). */
  readonly spec: WorkerSpec;
  readonly workerDir: string;
  /** Pooled workers: where an adopted fork is mounted. */
  readonly slot: Slot | undefined;
  readonly dirs: BoundedDirs;
  readonly prepared: PreparedShape;
}

/**
 * What one local worker holds, shared by its functions (open-worker.ts, watchdog.ts, exec.ts):
 * its dirs and sandbox shape, its core, its timers, and the trajectory its limits count for.
 */
export interface LocalWorkerState extends LocalWorkerParts {
  /** No bubblewrap (`unsafeNoSandbox`): commands run on the host, in the workspace's host path. */
  readonly unsafe: boolean;
  /** Aborted when the worker ends: every exec in it ends. */
  readonly life: AbortController;
  readonly exited: Promise<WorkerExit>;
  readonly resolveExit: (e: WorkerExit) => void;
  /** Why it ended, once it did. */
  exit: WorkerExit | undefined;
  stopping: Promise<void> | undefined;
  agent: RunningAgent | undefined;
  wallClock: NodeJS.Timeout | undefined;
  watchdog: NodeJS.Timeout | undefined;
  /** The trajectory being served, from its assignment on (its limits count from then). */
  active: WorkerSpec | undefined;
  /** Given a trajectory already (once only). */
  assigned: boolean;
  startedAt: number;
  /** The cgroup's CPU counter at assignment, µs (a pooled worker's boot and idle time do not count). */
  cpuBaseUsec: number;
  /** The cgroup's refused-fork counter (pids.events `max`) at assignment. */
  pidsRejectedBase: number;
  /** The workspace's filesystem enforces the disk limit itself. */
  quotaByFs: boolean;
  lastDiskCheck: number;
  /** A watchdog tick is running. */
  checking: boolean;
  /** A pooled agent worker's state when first ready, which a reset restores (undefined: it cannot be reset). */
  pristine: Pristine | undefined;
}

/** The limits in force: the trajectory's once assigned, else the spec it was opened with. */
export function limitsOf(ws: LocalWorkerState): ResourceLimits {
  return (ws.active ?? ws.spec).limits;
}

/**
 * Ends the worker once (later calls get the same promise): timers, execs, the core, every process
 * in its cgroup, then everything it made — config (gateway token), sockets, HOME, /tmp, the slot.
 */
export function endWorker(ws: LocalWorkerState, e: WorkerExit): Promise<void> {
  if (ws.stopping) return ws.stopping;
  ws.exit = e;
  ws.stopping = (async () => {
    clearTimeout(ws.wallClock);
    clearInterval(ws.watchdog);
    ws.life.abort(new FlakegymError("E_WORKER_STOPPED", `worker ${ws.id} stopped: ${e.reason}`));
    await ws.agent?.stop().catch(() => {});
    await ws.prepared.cgroup.killAll(5000);
    await ws.prepared.dispose();
    await releaseSlot(ws.slot, ws.workerDir, ws.dirs).catch(() => {});
    ws.resolveExit(e);
  })();
  return ws.stopping;
}

/** (Re)starts the wall clock of the limits in force; an idle pooled worker's is the pool's idle limit. */
export function armWallClock(ws: LocalWorkerState): void {
  clearTimeout(ws.wallClock);
  ws.wallClock = setTimeout(() => void endWorker(ws, wallClockExitNow(ws)), limitsOf(ws).wallClockMs);
}

/** The wall clock's end: frozen when a stop from outside is seen now (frozen-verdict.ts), else the limit. */
function wallClockExitNow(ws: LocalWorkerState): WorkerExit {
  const ms = limitsOf(ws).wallClockMs;
  // an idle pooled worker (no trajectory) or one without bubblewrap: nothing to weigh
  if (!ws.agent || ws.unsafe || !ws.active)
    return { reason: "wall_clock", detail: `wall clock limit ${ms} ms` };
  return wallClockExitOf(freezeEvidenceOf(ws.agent), ms);
}

/** The error for a call on a worker that has ended. */
export function endedError(ws: LocalWorkerState, exit: WorkerExit): FlakegymError {
  return new FlakegymError("E_WORKER_STOPPED", `worker ${ws.id} has ended (${exit.reason})`);
}
