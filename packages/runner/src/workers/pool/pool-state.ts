import type { WorkerSpec } from "../types.js";
import { type KeyState, type PoolLimits, poolKeyOf } from "./decisions.js";
import { REUSE_DEFAULT } from "./reuse.js";
import type { IdleWorker, PoolableBackend, PoolState, WorkerPoolOptions } from "./types.js";

/** An idle, ready worker and when it became ready (ms since the epoch). */
export interface PoolEntry {
  readonly w: IdleWorker;
  readonly readyAt: number;
  /** Trajectories it served before (0: fresh from its boot; above: reset in place, `--reuse`). */
  readonly served: number;
}

/** One pool key: the spec its workers are booted from, its idle workers, boots and demand. */
export interface PoolKey {
  readonly template: WorkerSpec;
  readonly idle: PoolEntry[];
  booting: number;
  /** Workers out serving a trajectory that may come back reset (`--reuse`): supply, like a boot. */
  serving: number;
  lastDemand: number;
  /** Trajectories still to start, when the run said (`warm`); undefined: unknown. */
  pending: number | undefined;
  /** Trajectories waiting for a boot in flight (sooner than a boot of their own). */
  readonly waiters: ((e: PoolEntry | undefined) => void)[];
}

/**
 * What one warm pool holds, shared by its functions (pool.ts, pool-boot.ts, pool-take.ts): the
 * backend it boots on, its keys, its counters and whether it still works.
 */
export interface PoolCore {
  readonly inner: PoolableBackend;
  readonly o: WorkerPoolOptions;
  readonly limits: PoolLimits;
  readonly keys: Map<string, PoolKey>;
  /** Aborted by `close()`: boots in flight end. */
  readonly life: AbortController;
  readonly counts: { pooled: number; cold: number; retired: number; reused: number; resetRetired: number };
  /** Why every worker starts cold (the backend cannot pool, or boots kept failing). */
  unavailable: string | undefined;
  probed: Promise<string | undefined> | undefined;
  /** Consecutive failed boots. */
  failures: number;
  closed: boolean;
  /** A reconcile is queued (one per microtask at most). */
  scheduled: boolean;
  readonly inflight: Set<Promise<void>>;
}

/** A new pool's state: no keys, nothing booted. */
export function newPoolCore(inner: PoolableBackend, o: WorkerPoolOptions): PoolCore {
  return {
    inner,
    o,
    limits: {
      size: o.size,
      idleMs: o.idleMs,
      maxBooting: o.maxBooting ?? 2,
      reuse: o.reuse ?? REUSE_DEFAULT,
    },
    keys: new Map(),
    life: new AbortController(),
    counts: { pooled: 0, cold: 0, retired: 0, reused: 0, resetRetired: 0 },
    unavailable: undefined,
    probed: undefined,
    failures: 0,
    closed: false,
    scheduled: false,
    inflight: new Set(),
  };
}

/** What the pool is doing now. */
export function poolStateOf(p: PoolCore): PoolState {
  let idle = 0;
  let booting = 0;
  for (const k of p.keys.values()) {
    idle += k.idle.length;
    booting += k.booting;
  }
  return { ...(p.unavailable ? { unavailable: p.unavailable } : {}), idle, booting, ...p.counts };
}

/** Tells the pool's listener its new state. */
export function changed(p: PoolCore): void {
  p.o.onState?.(poolStateOf(p));
}

/** Why the backend cannot pool (asked once; said once), or undefined when it can. */
export function probe(p: PoolCore): Promise<string | undefined> {
  p.probed ??= p.inner.poolUnavailable().then((r) => {
    if (r && !p.unavailable) {
      p.unavailable = r;
      p.o.onNote?.(`warm pool unavailable, workers start cold: ${r}`);
      changed(p);
    }
    return r;
  });
  return p.probed;
}

/** A key as the pure decisions see it. */
export function keyStateOf(key: string, k: PoolKey): KeyState {
  return {
    key,
    idleSince: k.idle.map((e) => e.readyAt),
    booting: k.booting,
    ...(k.serving ? { serving: k.serving } : {}),
    lastDemand: k.lastDemand,
    ...(k.pending !== undefined ? { remaining: k.pending + k.waiters.length } : {}),
  };
}

/** Every key as the pure decisions see it, in the order keys were first asked for. */
export function snapshot(p: PoolCore): KeyState[] {
  return [...p.keys].map(([key, k]) => keyStateOf(key, k));
}

/** Stops an idle worker that is never handed out; false when it is no longer idle. */
export function retire(p: PoolCore, k: PoolKey, e: PoolEntry): boolean {
  const i = k.idle.indexOf(e);
  if (i < 0) return false;
  k.idle.splice(i, 1);
  p.counts.retired++;
  void e.w.stop().catch(() => {});
  return true;
}

/** The key of `spec`, made on first demand; asked for now. */
export function demand(p: PoolCore, spec: WorkerSpec): PoolKey {
  const key = poolKeyOf(spec);
  let k = p.keys.get(key);
  if (!k) {
    k = { template: spec, idle: [], booting: 0, serving: 0, lastDemand: 0, pending: undefined, waiters: [] };
    p.keys.set(key, k);
  }
  k.lastDemand = Date.now();
  return k;
}
