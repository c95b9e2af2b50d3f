import type { Worker, WorkerBackend, WorkerExit, WorkerSpec } from "../types.js";
import type { ResetReport } from "./reuse.js";

export interface WorkerPoolOptions {
  /** Pre-booted workers kept at most (idle + booting, over all keys). */
  readonly size: number;
  /** An idle worker is stopped after this long; a key not asked for this long is not refilled. */
  readonly idleMs: number;
  /** Boots in flight at most. Default 2. */
  readonly maxBooting?: number;
  /** Called whenever the pool's state changes (progress). */
  readonly onState?: (s: PoolState) => void;
  /** Why a pooled worker was replaced, a boot failed, or the pool is unavailable. */
  readonly onNote?: (message: string) => void;
  /**
   * Trajectories one worker serves at most (`--reuse`, default 1: a worker serves one trajectory
   * and is destroyed). Above 1 a worker handed back with a clean outcome is reset in place and
   * serves the next trajectory of its key (backends that can reset: local bubblewrap).
   */
  readonly reuse?: number;
}

/** What the pool is doing, for progress lines and summaries. */
export interface PoolState {
  /** Undefined while the pool works; else why every worker starts cold. */
  readonly unavailable?: string;
  readonly idle: number;
  readonly booting: number;
  /** Trajectories served by a pre-booted worker. */
  readonly pooled: number;
  /** Trajectories whose agent worker booted on the critical path (exec-only scoring workers are not counted). */
  readonly cold: number;
  /** Pre-booted workers that ended while idle (died or idle limit) and were never handed out. */
  readonly retired: number;
  /** Trajectories served by a worker that had served another before (reset in place, `--reuse`). */
  readonly reused: number;
  /** Workers handed back and retired instead of reset: the reset was not proven clean, or not tried (a doubt). */
  readonly resetRetired: number;
}

export interface PooledBackend extends WorkerBackend {
  /**
   * Starts filling the pool for workers like `spec` (counts as demand for its key). `trajectories`:
   * that many more trajectories of this shape are to come; the pool then boots no more workers for
   * the key than trajectories still to start (each `start` takes one off). Without it the key is
   * filled to the pool's size.
   */
  warm(spec: WorkerSpec, trajectories?: number): Promise<void>;
  state(): PoolState;
  /** Stops every idle worker and waits for boots in flight; started workers are their owners'. */
  close(): Promise<void>;
}

/**
 * A pre-booted worker that has no trajectory yet: sandbox made, Cline core up, an empty workspace.
 * It serves exactly one trajectory (`adopt`, once) and is then destroyed like any worker.
 */
export interface IdleWorker {
  readonly id: string;
  /** Resolves when the idle worker ends (died while idle, idle limit, stopped). */
  readonly exited: Promise<WorkerExit>;
  /**
   * Gives the worker its trajectory: `spec.workspace` (and `spec.depsDir`) become what the agent,
   * its terminals and the diff see, and the trajectory's limits start counting now. Once only.
   */
  adopt(spec: WorkerSpec, signal?: AbortSignal): Promise<Worker>;
  /** Stops everything it started; idempotent. */
  stop(): Promise<void>;
  /**
   * Backends that can reset a worker in place (local bubblewrap): after its trajectory, brings the
   * worker back to what it was when first ready — processes but its core's killed, the fork
   * unmounted, /tmp and HOME wiped, the core's files and state restored — and reports what it
   * found; the pool judges the report (reuse.ts `resetVerdict`). `adopt` may then be called again.
   */
  reset?(signal?: AbortSignal): Promise<ResetReport>;
}

/** A backend that can pre-boot workers for a pool (local bubblewrap). */
export interface PoolableBackend extends WorkerBackend {
  /** Why pre-booted workers cannot adopt a workspace here (printed), or undefined when they can. */
  poolUnavailable(): Promise<string | undefined>;
  /** Boots an idle worker shaped like `template` (its workspace/depsDir/ids are ignored). */
  boot(template: WorkerSpec, signal?: AbortSignal): Promise<IdleWorker>;
}

/** Whether `b` can pre-boot workers (has `boot` and `poolUnavailable`). */
export function isPoolable(b: WorkerBackend): b is PoolableBackend {
  const p = b as Partial<PoolableBackend>;
  return typeof p.boot === "function" && typeof p.poolUnavailable === "function";
}
