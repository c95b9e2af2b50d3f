import type { WorkerSpec } from "../types.js";
import { reconcileIntervalMs, unpoolableReason } from "./decisions.js";
import { reconcile, schedule } from "./pool-boot.js";
import { changed, demand, newPoolCore, type PoolCore, poolStateOf, probe } from "./pool-state.js";
import { startWorker } from "./pool-take.js";
import { reuseSummary } from "./reuse.js";
import type { PoolableBackend, PooledBackend, WorkerPoolOptions } from "./types.js";

/** Announces demand for `spec`'s key (and, when given, that many more trajectories of it). */
async function warm(p: PoolCore, spec: WorkerSpec, trajectories?: number): Promise<void> {
  if (p.closed || unpoolableReason(spec) || (await probe(p))) return;
  const k = demand(p, spec);
  if (trajectories !== undefined) k.pending = (k.pending ?? 0) + Math.max(0, trajectories);
  schedule(p);
}

/** Stops every idle worker and waits for boots in flight; started workers are their owners'. Idempotent. */
async function close(p: PoolCore, ticker: NodeJS.Timeout): Promise<void> {
  if (p.closed) return;
  p.closed = true;
  clearInterval(ticker);
  for (const k of p.keys.values()) for (const w of k.waiters.splice(0)) w(undefined);
  p.life.abort(new Error("worker pool closed"));
  await Promise.allSettled([...p.inflight]);
  const idle = [...p.keys.values()].flatMap((k) => k.idle.splice(0));
  await Promise.allSettled(idle.map((e) => e.w.stop()));
  const said = reuseSummary(p.counts);
  if (said) p.o.onNote?.(said);
  changed(p);
}

/**
 * A warm pool in front of a poolable backend: `start` hands out a pre-booted idle worker that
 * adopts the trajectory's workspace, else starts one cold; the pool refills in the background,
 * bounded by its size and boot concurrency. A worker serves one trajectory and is then destroyed
 * by its owner (never returned to the pool); one that ends while idle is dropped and replaced.
 * The pool is a module of named functions over one `PoolCore` (pool-state.ts); its decisions are
 * pure (decisions.ts).
 */
export function createWorkerPool(inner: PoolableBackend, o: WorkerPoolOptions): PooledBackend {
  const p = newPoolCore(inner, o);
  const ticker = setInterval(() => reconcile(p), reconcileIntervalMs(p.limits.idleMs));
  ticker.unref();
  return {
    kind: inner.kind,
    capabilities: inner.capabilities,
    async describe() {
      const s = poolStateOf(p);
      return {
        ...(await inner.describe()),
        pool: s.unavailable
          ? `unavailable: ${s.unavailable}`
          : `size ${p.limits.size}, idle limit ${p.limits.idleMs} ms`,
      };
    },
    warm: (spec, trajectories) => warm(p, spec, trajectories),
    start: (spec, signal) => startWorker(p, spec, signal),
    state: () => poolStateOf(p),
    close: () => close(p, ticker),
  };
}
