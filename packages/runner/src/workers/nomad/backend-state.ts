import type { Allocation, NomadClient } from "@flakegym/nomad-jobs";
import { WORKER_TASK } from "@flakegym/nomad-jobs";
import { FlakegymError } from "../../errors.js";
import type { Worker, WorkerExit } from "../types.js";
import { isTerminal } from "./allocation.js";
import { exitOf } from "./job-shape.js";
import type { NomadBackendDeps, NomadBackendOptions } from "./options.js";
import { abortable, type ParentJobs } from "./parents.js";
import type { ReadinessProbe } from "./probe.js";
import type { StartQueue } from "./start-queue.js";
import { sweepOrphans } from "./sweep.js";

export interface NomadWorker extends Worker {
  readonly backend: "nomad";
  /** The dispatched job (agent workers) or undefined (command-only workers). */
  readonly jobId: string | undefined;
  readonly allocId: string | undefined;
}

/**
 * What one Nomad backend holds, shared by its functions (backend.ts, worker.ts, start-agent.ts):
 * its options and client, the parent jobs and live workers it must purge, the runs it swept.
 */
export interface NomadBackendState {
  readonly o: NomadBackendOptions;
  readonly client: NomadClient;
  readonly probe: ReadinessProbe;
  readonly now: () => number;
  readonly progress: NomadBackendDeps["onProgress"];
  /** `{ namespace }` for the client's calls, when the backend has one. */
  readonly ns: { namespace?: string };
  /** Aborted by `close()`: every wait of the backend ends. */
  readonly closing: AbortController;
  readonly parents: ParentJobs;
  /** At most `maxConcurrentStarts` agent starts talk to Nomad at once (start-queue.ts). */
  readonly starts: StartQueue;
  readonly workers: Set<NomadWorker & { stop(): Promise<void> }>;
  /** The sweep of each run id's orphans, once per run. */
  readonly swept: Map<string, Promise<void>>;
}

export const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

/** The bound of a cleanup call (purges, log reads after the fact). */
export const cleanupOpts = (st: NomadBackendState) => ({
  timeoutMs: st.o.cleanupTimeoutMs,
  timeoutName: "cleanupTimeoutMs",
  ...st.ns,
});

/** Purges a job; returns the error instead of throwing (cleanup paths). */
export async function purge(st: NomadBackendState, jobId: string): Promise<unknown> {
  try {
    await st.client.jobs.deregister(jobId, { purge: true }, cleanupOpts(st));
    st.progress?.({ kind: "purged", jobId });
    return undefined;
  } catch (err) {
    return err;
  }
}

/** Sweeps the orphans of `runId` (once per run; a failed sweep is tried again by the next start). */
export function sweepOnce(st: NomadBackendState, runId: string, signal?: AbortSignal): Promise<void> {
  let p = st.swept.get(runId);
  if (!p) {
    p = sweepOrphans(st.client, {
      runId,
      now: st.now(),
      namespace: st.o.namespace,
      signal: st.closing.signal,
    }).then((purged) => {
      if (purged.length) st.progress?.({ kind: "swept", purged });
    });
    p.catch(() => st.swept.delete(runId));
    st.swept.set(runId, p);
  }
  return abortable(p, signal);
}

/** The last lines of the worker task's stderr, when Nomad has them. */
export async function stderrTail(st: NomadBackendState, allocId: string): Promise<string | undefined> {
  try {
    const r = await st.client.logs.read(allocId, { task: WORKER_TASK, type: "stderr" }, cleanupOpts(st));
    const lines = r.data.trimEnd().split("\n");
    return lines.length && r.data.trim() ? lines.slice(-20).join("\n") : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Follows a running allocation until it ends and says why: Nomad's max_run_duration (the wall
 * clock), an OOM kill, a lost node or any other end. Resolves "stopped" once `signal` aborts.
 */
export async function watchExit(
  st: NomadBackendState,
  alloc: Allocation,
  signal: AbortSignal,
): Promise<WorkerExit> {
  let latest = alloc;
  let index = alloc.ModifyIndex;
  while (!signal.aborted) {
    if (isTerminal(latest)) return exitOf(latest);
    try {
      const r = await st.client.allocations.info(alloc.ID, { signal, index, waitMs: st.o.pollMs, ...st.ns });
      latest = r.data;
      index = r.meta.index ?? index;
    } catch {
      if (signal.aborted) break;
      await sleep(Math.min(st.o.pollMs, 5_000), signal);
    }
  }
  return { reason: "stopped" };
}

/** An abort (Ctrl-C) stays recognisable as one; everything else is passed through. */
export function wrapAbort(err: unknown, signal: AbortSignal | undefined, what: string): unknown {
  if (signal?.aborted) {
    const reason = signal.reason;
    if (reason instanceof FlakegymError) return reason;
    return new FlakegymError("E_INTERRUPTED", `${what}: interrupted`, { cause: err });
  }
  return err;
}
