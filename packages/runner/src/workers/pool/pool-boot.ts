import type { WorkerExit } from "../types.js";
import { bootFailureOf, planReconcile } from "./decisions.js";
import { changed, type PoolCore, type PoolEntry, type PoolKey, retire, snapshot } from "./pool-state.js";

/** A ready worker (booted, or reset after a trajectory) goes to a trajectory waiting for it, else idles until handed out or retired. */
export function booted(p: PoolCore, k: PoolKey, e: PoolEntry): void {
  const w = e.w;
  const waiter = k.waiters.shift();
  if (waiter) {
    waiter(e);
    return;
  }
  k.idle.push(e);
  // a worker that dies (or reaches its idle cap) while idle is never handed out
  void w.exited.then((x: WorkerExit) => {
    if (!retire(p, k, e)) return;
    if (x.reason !== "stopped")
      p.o.onNote?.(`pooled worker ${w.id} ended while idle: ${x.reason}${x.detail ? ` (${x.detail})` : ""}`);
    changed(p);
    schedule(p);
  });
}

/** A failed boot: its waiter starts cold; enough failures in a row make the pool unavailable. */
function bootFailed(p: PoolCore, k: PoolKey, err: unknown): void {
  k.waiters.shift()?.(undefined);
  if (p.closed) return;
  p.failures++;
  const f = bootFailureOf(p.failures, (err as Error).message);
  p.o.onNote?.(f.note);
  if (f.unavailable && !p.unavailable) p.unavailable = f.unavailable;
}

/** Boots one worker for `k` in the background (tracked until it settles, for `close`). */
export function boot(p: PoolCore, k: PoolKey): void {
  k.booting++;
  const run = (async () => {
    try {
      const w = await p.inner.boot(k.template, p.life.signal);
      p.failures = 0;
      if (p.closed) {
        await w.stop();
        return;
      }
      booted(p, k, { w, readyAt: Date.now(), served: 0 });
    } catch (err) {
      bootFailed(p, k, err);
    } finally {
      k.booting--;
      changed(p);
      schedule(p);
    }
  })();
  p.inflight.add(run);
  void run.finally(() => p.inflight.delete(run));
}

/** Carries out the pure plan (`planReconcile`): stop expired idle workers, evict for a starved key, boot. */
export function reconcile(p: PoolCore): void {
  if (p.closed || p.unavailable) return;
  const plan = planReconcile(snapshot(p), Date.now(), p.limits);
  // entries first: retiring one shifts the indexes of its key's others
  const going = plan.retire.map((r) => {
    const k = p.keys.get(r.key)!;
    return { k, e: k.idle[r.index]! };
  });
  let dirty = false;
  for (const { k, e } of going) dirty = retire(p, k, e) || dirty;
  for (const key of plan.boot) {
    boot(p, p.keys.get(key)!);
    dirty = true;
  }
  if (dirty) changed(p);
}

/** Queues one reconcile for the end of this turn (many changes at once reconcile once). */
export function schedule(p: PoolCore): void {
  if (p.scheduled || p.closed) return;
  p.scheduled = true;
  queueMicrotask(() => {
    p.scheduled = false;
    reconcile(p);
  });
}
