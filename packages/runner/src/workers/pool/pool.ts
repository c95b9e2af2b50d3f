import type { Worker, WorkerBackend, WorkerSpec } from "../types.js";
import {
  bootsToStart,
  evictionFor,
  expiredIdle,
  type KeyState,
  poolKeyOf,
  unpoolableReason,
} from "./decisions.js";
import type { IdleWorker, PoolableBackend } from "./types.js";

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

/** Consecutive failed boots after which the pool gives up (every worker then starts cold). */
const MAX_BOOT_FAILURES = 3;

interface Entry {
  readonly w: IdleWorker;
  readonly readyAt: number;
}

interface Key {
  readonly template: WorkerSpec;
  readonly idle: Entry[];
  booting: number;
  lastDemand: number;
  /** Trajectories still to start, when the run said (`warm`); undefined: unknown. */
  pending: number | undefined;
  /** Trajectories waiting for a boot in flight (sooner than a boot of their own). */
  readonly waiters: ((e: Entry | undefined) => void)[];
}

/**
 * A warm pool in front of a poolable backend: `start` hands out a pre-booted idle worker that
 * adopts the trajectory's workspace, else starts one cold; the pool refills in the background,
 * bounded by its size and boot concurrency. A worker serves one trajectory and is then destroyed
 * by its owner (never returned to the pool); one that ends while idle is dropped and replaced.
 */
export function createWorkerPool(inner: PoolableBackend, o: WorkerPoolOptions): PooledBackend {
  const keys = new Map<string, Key>();
  const life = new AbortController();
  const counts = { pooled: 0, cold: 0, retired: 0 };
  let unavailable: string | undefined;
  let probed: Promise<string | undefined> | undefined;
  let failures = 0;
  let closed = false;
  const inflight = new Set<Promise<void>>();
  const limits = { size: o.size, idleMs: o.idleMs, maxBooting: o.maxBooting ?? 2 };

  const state = (): PoolState => {
    let idle = 0;
    let booting = 0;
    for (const k of keys.values()) {
      idle += k.idle.length;
      booting += k.booting;
    }
    return { ...(unavailable ? { unavailable } : {}), idle, booting, ...counts };
  };
  const changed = () => o.onState?.(state());
  const probe = () => {
    probed ??= inner.poolUnavailable().then((r) => {
      if (r && !unavailable) {
        unavailable = r;
        o.onNote?.(`warm pool unavailable, workers start cold: ${r}`);
        changed();
      }
      return r;
    });
    return probed;
  };
  const keyState = (key: string, k: Key): KeyState => ({
    key,
    idleSince: k.idle.map((e) => e.readyAt),
    booting: k.booting,
    lastDemand: k.lastDemand,
    ...(k.pending !== undefined ? { remaining: k.pending + k.waiters.length } : {}),
  });
  const snapshot = (): KeyState[] => [...keys].map(([key, k]) => keyState(key, k));

  const retire = (k: Key, e: Entry) => {
    const i = k.idle.indexOf(e);
    if (i < 0) return false;
    k.idle.splice(i, 1);
    counts.retired++;
    void e.w.stop().catch(() => {});
    return true;
  };

  const boot = (k: Key) => {
    k.booting++;
    const p = (async () => {
      try {
        const w = await inner.boot(k.template, life.signal);
        failures = 0;
        if (closed) {
          await w.stop();
          return;
        }
        const e: Entry = { w, readyAt: Date.now() };
        const waiter = k.waiters.shift();
        if (waiter) {
          waiter(e);
          return;
        }
        k.idle.push(e);
        // a worker that dies (or reaches its idle cap) while idle is never handed out
        void w.exited.then((x) => {
          if (retire(k, e)) {
            if (x.reason !== "stopped")
              o.onNote?.(
                `pooled worker ${w.id} ended while idle: ${x.reason}${x.detail ? ` (${x.detail})` : ""}`,
              );
            changed();
            schedule();
          }
        });
      } catch (err) {
        k.waiters.shift()?.(undefined);
        if (closed) return;
        failures++;
        o.onNote?.(
          `pooled worker boot failed (${failures}/${MAX_BOOT_FAILURES}): ${(err as Error).message.split("\n")[0]}`,
        );
        if (failures >= MAX_BOOT_FAILURES && !unavailable) {
          unavailable = `${MAX_BOOT_FAILURES} pooled boots failed in a row (last: ${(err as Error).message.split("\n")[0]})`;
        }
      } finally {
        k.booting--;
        changed();
        schedule();
      }
    })();
    inflight.add(p);
    void p.finally(() => inflight.delete(p));
  };

  /** Carries out the pure plan: stop expired idle workers, evict for a starved key, boot. */
  const reconcile = () => {
    if (closed || unavailable) return;
    const now = Date.now();
    let dirty = false;
    for (const [key, k] of keys) {
      const stale = expiredIdle(keyState(key, k), now, limits.idleMs);
      for (const e of stale.map((i) => k.idle[i]!)) dirty = retire(k, e) || dirty;
    }
    const newest = [...keys].sort((a, b) => b[1].lastDemand - a[1].lastDemand)[0];
    if (newest && now - newest[1].lastDemand <= limits.idleMs) {
      const victim = evictionFor(snapshot(), newest[0], limits.size);
      if (victim) dirty = retire(keys.get(victim.key)!, keys.get(victim.key)!.idle[victim.index]!) || dirty;
    }
    for (const key of bootsToStart(snapshot(), now, limits)) {
      boot(keys.get(key)!);
      dirty = true;
    }
    if (dirty) changed();
  };
  let pending = false;
  const schedule = () => {
    if (pending || closed) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      reconcile();
    });
  };
  const ticker = setInterval(reconcile, Math.max(250, Math.min(5000, Math.floor(limits.idleMs / 4))));
  ticker.unref();

  const demand = (spec: WorkerSpec): Key => {
    const key = poolKeyOf(spec);
    let k = keys.get(key);
    if (!k) {
      k = { template: spec, idle: [], booting: 0, lastDemand: 0, pending: undefined, waiters: [] };
      keys.set(key, k);
    }
    k.lastDemand = Date.now();
    return k;
  };

  /** The next boot in flight for `k` when there is one nobody waits for yet (bounded by the boot's own start timeout). */
  const waitForBoot = (k: Key, signal?: AbortSignal): Promise<Entry | undefined> | undefined => {
    if (k.booting <= k.waiters.length) return undefined;
    return new Promise<Entry | undefined>((resolve) => {
      const onAbort = () => {
        const i = k.waiters.indexOf(take);
        if (i >= 0) k.waiters.splice(i, 1);
        resolve(undefined);
      };
      const take = (e: Entry | undefined) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(e);
      };
      k.waiters.push(take);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  };

  const cold = async (spec: WorkerSpec, signal?: AbortSignal): Promise<Worker> => {
    counts.cold++;
    changed();
    return await inner.start(spec, signal);
  };

  return {
    kind: inner.kind,
    async describe() {
      const s = state();
      return {
        ...(await inner.describe()),
        pool: s.unavailable
          ? `unavailable: ${s.unavailable}`
          : `size ${limits.size}, idle limit ${limits.idleMs} ms`,
      };
    },
    async warm(spec, trajectories) {
      if (closed || unpoolableReason(spec) || (await probe())) return;
      const k = demand(spec);
      if (trajectories !== undefined) k.pending = (k.pending ?? 0) + Math.max(0, trajectories);
      schedule();
    },
    async start(spec, signal) {
      // exec-only workers (scoring) boot no core: neither pooled nor cold, so not counted
      if (!spec.agent) return await inner.start(spec, signal);
      if (closed || unpoolableReason(spec) || (await probe())) return await cold(spec, signal);
      const k = demand(spec);
      if (k.pending !== undefined) k.pending = Math.max(0, k.pending - 1);
      schedule();
      // the oldest idle worker first (the next to reach the idle limit), else one booting already
      for (let e = k.idle.shift() ?? (await waitForBoot(k, signal)); e; e = k.idle.shift()) {
        changed();
        try {
          const w = await e.w.adopt(spec, signal);
          counts.pooled++;
          changed();
          return w;
        } catch (err) {
          counts.retired++;
          await e.w.stop().catch(() => {});
          signal?.throwIfAborted();
          o.onNote?.(
            `pooled worker ${e.w.id} could not adopt the workspace, replaced: ${(err as Error).message}`,
          );
        } finally {
          schedule();
        }
      }
      return await cold(spec, signal);
    },
    state,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(ticker);
      for (const k of keys.values()) for (const w of k.waiters.splice(0)) w(undefined);
      life.abort(new Error("worker pool closed"));
      await Promise.allSettled([...inflight]);
      const idle = [...keys.values()].flatMap((k) => k.idle.splice(0));
      await Promise.allSettled(idle.map((e) => e.w.stop()));
      changed();
    },
  };
}
