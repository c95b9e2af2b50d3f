import type { ExecResult, WorkerSpec } from "./types.js";

/** The result every backend returns for `exec` on a worker that has already stopped. */
export function stoppedExecResult(worker: string, reason: string): ExecResult {
  return {
    exitCode: 125,
    stdout: "",
    stderr: `flakegym: worker ${worker} has stopped (${reason})`,
    timedOut: false,
    durationMs: 0,
  };
}

/** An exec's timeout: what the caller asked for, never past the worker's remaining wall clock. */
export function execTimeoutMs(spec: WorkerSpec, startedAt: number, requested?: number): number {
  const remaining = spec.limits.wallClockMs - (Date.now() - startedAt);
  return Math.max(1, Math.min(requested ?? remaining, remaining));
}
