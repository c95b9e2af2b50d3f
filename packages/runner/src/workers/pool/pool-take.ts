import type { Worker, WorkerSpec } from "../types.js";
import { unpoolableReason } from "./decisions.js";
import { schedule } from "./pool-boot.js";
import { mayReturn, releasable } from "./pool-reuse.js";
import { changed, demand, type PoolCore, type PoolEntry, type PoolKey, probe } from "./pool-state.js";

/** The next boot in flight for `k` when there is one nobody waits for yet (bounded by the boot's own start timeout). */
function waitForBoot(k: PoolKey, signal?: AbortSignal): Promise<PoolEntry | undefined> | undefined {
  if (k.booting <= k.waiters.length) return undefined;
  return new Promise<PoolEntry | undefined>((resolve) => {
    const onAbort = () => {
      const i = k.waiters.indexOf(take);
      if (i >= 0) k.waiters.splice(i, 1);
      resolve(undefined);
    };
    const take = (e: PoolEntry | undefined) => {
      signal?.removeEventListener("abort", onAbort);
      resolve(e);
    };
    k.waiters.push(take);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** A worker booted on the critical path (counted cold). */
async function cold(p: PoolCore, spec: WorkerSpec, signal?: AbortSignal): Promise<Worker> {
  p.counts.cold++;
  changed(p);
  return await p.inner.start(spec, signal);
}

/** `e` adopts the trajectory; undefined (and `e` replaced) when it cannot. */
async function adopt(
  p: PoolCore,
  k: PoolKey,
  e: PoolEntry,
  spec: WorkerSpec,
  signal?: AbortSignal,
): Promise<Worker | undefined> {
  // a worker that may come back after this trajectory is supply from now on (no boot for it)
  const returning = mayReturn(p, e, e.served + 1);
  if (returning) k.serving++;
  changed(p);
  try {
    const w = await e.w.adopt(spec, signal);
    p.counts.pooled++;
    if (e.served > 0) p.counts.reused++;
    changed(p);
    return releasable(p, k, { e, w, served: e.served + 1, returning });
  } catch (err) {
    if (returning) k.serving--;
    p.counts.retired++;
    await e.w.stop().catch(() => {});
    signal?.throwIfAborted();
    p.o.onNote?.(
      `pooled worker ${e.w.id} could not adopt the workspace, replaced: ${(err as Error).message}`,
    );
    return undefined;
  } finally {
    schedule(p);
  }
}

/**
 * A worker for `spec`: exec-only workers straight from the backend; agents from the oldest idle
 * worker of their key (the next to reach the idle limit), else one booting already, else cold.
 */
export async function startWorker(p: PoolCore, spec: WorkerSpec, signal?: AbortSignal): Promise<Worker> {
  // exec-only workers (scoring) boot no core: neither pooled nor cold, so not counted
  if (!spec.agent) return await p.inner.start(spec, signal);
  if (p.closed || unpoolableReason(spec) || (await probe(p))) return await cold(p, spec, signal);
  const k = demand(p, spec);
  if (k.pending !== undefined) k.pending = Math.max(0, k.pending - 1);
  schedule(p);
  for (let e = k.idle.shift() ?? (await waitForBoot(k, signal)); e; e = k.idle.shift()) {
    const w = await adopt(p, k, e, spec, signal);
    if (w) return w;
  }
  return await cold(p, spec, signal);
}
