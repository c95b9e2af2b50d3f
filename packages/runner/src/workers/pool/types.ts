import type { Worker, WorkerBackend, WorkerExit, WorkerSpec } from "../types.js";

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
