import type { ProgressEvent } from "../../progress/events.js";
import type { WorkerSpec } from "../types.js";
import { REUSE_DEFAULT, REUSE_MAX } from "./reuse.js";
import type { PoolState } from "./types.js";

/** The `--reuse` help text (rollout, eval, validate, serve). */
export const REUSE_HELP = `trajectories one pooled agent worker serves, reset in place between them (local backend; retired on any doubt: an unclean outcome, a reset not proven clean, memory growth; podman and Nomad: always 1). Default ${REUSE_DEFAULT} (docs/design/performance.md says why; --reuse 1: a fresh worker per trajectory); at most ${REUSE_MAX}`;

/**
 * The pool's decisions as pure functions of data: which specs a pre-booted worker can serve, which
 * idle workers go, how many to boot. The orchestrator (pool.ts) only carries them out.
 */

/**
 * What a pre-booted worker is made for: everything fixed when its sandbox and core start (profile,
 * environment, gateway socket, whether /deps exists, cgroup and rlimit limits). The wall clock is
 * not in it: it starts at assignment. Two specs with the same key can share a pool.
 */
export function poolKeyOf(spec: WorkerSpec): string {
  const { memoryMb, pids, cpuSeconds, diskMb } = spec.limits;
  const env = Object.entries(spec.env ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([
    spec.profile,
    spec.gateway.socketPath ?? null,
    spec.depsDir !== undefined,
    spec.hostBinds ?? [],
    [memoryMb, pids, cpuSeconds ?? null, diskMb ?? null],
    env,
  ]);
}

/** Why `spec` cannot be served by a pooled worker, or undefined when it can. */
export function unpoolableReason(spec: WorkerSpec): string | undefined {
  if (!spec.agent) return "exec-only workers (scoring) boot no core: nothing to pre-boot";
  if (spec.readOnlyFiles?.length) return "read-only files are bound at sandbox start";
  if (spec.image !== undefined) return "image workers are not pooled";
  if (spec.systemRoot !== undefined) return "a task's built root filesystem is bound at sandbox start";
  if (spec.workspaceAlias !== undefined || spec.containerMounts?.length)
    return "a task's container paths (workdir, mounts) are bound at sandbox start";
  if (!spec.gateway.socketPath) return "pooled local workers reach the gateway through its unix socket";
  return undefined;
}

/** One pool key's demand and supply, as the orchestrator sees it. */
export interface KeyState {
  readonly key: string;
  /** Idle, ready workers (their ready times, ms since the epoch). */
  readonly idleSince: readonly number[];
  /** Boots in flight. */
  readonly booting: number;
  /** Workers serving a trajectory that come back reset when it ends cleanly (`--reuse`): supply, like a boot. */
  readonly serving?: number;
  /** Last time a trajectory (or `warm`) asked for this key, ms since the epoch. */
  readonly lastDemand: number;
  /**
   * Trajectories of this key the run has still to serve: not started yet, or waiting for a boot in
   * flight. Undefined when the run does not say (the pool then fills to its size).
   */
  readonly remaining?: number;
}

export interface PoolLimits {
  /** Idle + booting workers at most, over all keys. */
  readonly size: number;
  /** Idle workers older than this are stopped, and a key not asked for this long is not refilled. */
  readonly idleMs: number;
  /** Boots in flight at most (a core's boot is CPU-bound: a few at once only slow each other). */
  readonly maxBooting: number;
  /** Trajectories a worker serves at most (`--reuse`; 1, the default: none reused). */
  readonly reuse?: number;
}

/** A key is wanted while it was asked for within the idle limit. Pure. */
export function isWanted(k: KeyState, now: number, idleMs: number): boolean {
  return now - k.lastDemand <= idleMs;
}

/** Indexes (into `k.idleSince`) of idle workers past the idle limit, or of a key no longer wanted. Pure. */
export function expiredIdle(k: KeyState, now: number, idleMs: number): number[] {
  const wanted = isWanted(k, now, idleMs);
  return k.idleSince.flatMap((t, i) => (!wanted || now - t > idleMs ? [i] : []));
}

/** Workers a key has or will have for its next trajectories: idle, booting, and serving ones that come back. Pure. */
export function supplyOf(k: KeyState): number {
  return k.idleSince.length + k.booting + (k.serving ?? 0);
}

/**
 * The keys to boot one more worker for now, most recently asked first, within the pool's size and
 * the boot concurrency, and never past a key's remaining trajectories (a worker nobody will use is
 * a core boot's CPU taken from the trajectories still running). Pure.
 */
export function bootsToStart(keys: readonly KeyState[], now: number, limits: PoolLimits): string[] {
  let total = keys.reduce((n, k) => n + supplyOf(k), 0);
  let booting = keys.reduce((n, k) => n + k.booting, 0);
  const out: string[] = [];
  const wanted = keys
    .filter((k) => isWanted(k, now, limits.idleMs))
    .sort((a, b) => b.lastDemand - a.lastDemand);
  const have = new Map(wanted.map((k) => [k.key, supplyOf(k)]));
  // round robin over wanted keys so one key cannot starve another
  for (let progress = true; progress; ) {
    progress = false;
    for (const k of wanted) {
      if (total >= limits.size || booting >= limits.maxBooting) return out;
      const n = have.get(k.key)!;
      if (n >= limits.size || (k.remaining !== undefined && n >= k.remaining)) continue;
      have.set(k.key, n + 1);
      out.push(k.key);
      total++;
      booting++;
      progress = true;
    }
  }
  return out;
}

/**
 * When a wanted key has no room (the pool is full of other keys' idle workers), the idle worker to
 * stop for it: the oldest one of the least recently asked key that is not `forKey`. Pure.
 */
export function evictionFor(
  keys: readonly KeyState[],
  forKey: string,
  size: number,
): { key: string; index: number } | undefined {
  const total = keys.reduce((n, k) => n + supplyOf(k), 0);
  const mine = keys.find((k) => k.key === forKey);
  if (total < size || (mine && supplyOf(mine) > 0)) return undefined;
  const victims = keys
    .filter((k) => k.key !== forKey && k.idleSince.length > 0)
    .sort((a, b) => a.lastDemand - b.lastDemand);
  const v = victims[0];
  if (!v) return undefined;
  let oldest = 0;
  v.idleSince.forEach((t, i) => {
    if (t < v.idleSince[oldest]!) oldest = i;
  });
  return { key: v.key, index: oldest };
}

/** Idle workers to stop and keys to boot for, as one reconcile pass of the pool carries them out. */
export interface ReconcilePlan {
  /** Idle workers to stop: indexes into their key's `idleSince` as given (expired first, then an eviction). */
  readonly retire: readonly { readonly key: string; readonly index: number }[];
  /** One boot per entry, in order. */
  readonly boot: readonly string[];
}

/**
 * One reconcile pass: the idle workers past the idle limit (or of unwanted keys) go; then, when the
 * most recently asked key is still wanted and has no room, one idle worker of another key is evicted
 * for it; then the boots that fit. Each step sees the pool as the steps before left it. Pure.
 */
export function planReconcile(keys: readonly KeyState[], now: number, limits: PoolLimits): ReconcilePlan {
  const retire: { key: string; index: number }[] = [];
  // the original index of every idle worker still there, per key
  const left = new Map(keys.map((k) => [k.key, k.idleSince.map((_, i) => i)]));
  const view = () => keys.map((k) => ({ ...k, idleSince: left.get(k.key)!.map((i) => k.idleSince[i]!) }));
  const drop = (key: string, position: number) => {
    const rest = left.get(key)!;
    retire.push({ key, index: rest[position]! });
    rest.splice(position, 1);
  };
  for (const k of keys) {
    const gone = expiredIdle(k, now, limits.idleMs);
    for (const i of gone) retire.push({ key: k.key, index: i });
    left.set(
      k.key,
      left.get(k.key)!.filter((i) => !gone.includes(i)),
    );
  }
  const newest = [...keys].sort((a, b) => b.lastDemand - a.lastDemand)[0];
  if (newest && isWanted(newest, now, limits.idleMs)) {
    const victim = evictionFor(view(), newest.key, limits.size);
    if (victim) drop(victim.key, victim.index);
  }
  return { retire, boot: bootsToStart(view(), now, limits) };
}

/** How often the pool reconciles on its own (idle limits expire without any event): a quarter of the idle limit, within 0.25–5 s. Pure. */
export function reconcileIntervalMs(idleMs: number): number {
  return Math.max(250, Math.min(5000, Math.floor(idleMs / 4)));
}

/** Consecutive failed boots after which the pool gives up (every worker then starts cold). */
export const MAX_BOOT_FAILURES = 3;

/**
 * What a failed boot means: the note printed, and, at the `MAX_BOOT_FAILURES`th failure in a row,
 * why the pool is unavailable from now on. `failures` counts this one. Pure.
 */
export function bootFailureOf(
  failures: number,
  message: string,
): { readonly note: string; readonly unavailable?: string } {
  const first = message.split("\n")[0];
  return {
    note: `pooled worker boot failed (${failures}/${MAX_BOOT_FAILURES}): ${first}`,
    ...(failures >= MAX_BOOT_FAILURES
      ? { unavailable: `${MAX_BOOT_FAILURES} pooled boots failed in a row (last: ${first})` }
      : {}),
  };
}

/** Whether a run uses the pool unless told: long runs (many trajectories), evals and serve. Pure. */
export function poolByDefault(run: { command: "rollout" | "eval" | "serve"; trajectories: number }): boolean {
  return run.command !== "rollout" || run.trajectories >= POOL_DEFAULT_MIN_TRAJECTORIES;
}

/**
 * The `--pool` help text of a command, stated from the same rule `poolByDefault` and `resolvePool`
 * apply (so `--help` cannot contradict what the command does). Pure.
 */
export function poolHelp(command: "rollout" | "eval" | "serve"): string {
  const what =
    command === "serve"
      ? "pre-booted agent workers each running group keeps ready (local backend; 0: off)"
      : "pre-booted agent workers kept ready (local backend; 0: off)";
  const always = poolByDefault({ command, trajectories: 1 });
  const cap = command === "serve" ? "--concurrency" : "--concurrency, capped by the trajectories";
  if (always) return `${what}. Default: ${cap}`;
  return `${what}. Default: off for ${command}s of fewer than ${POOL_DEFAULT_MIN_TRAJECTORIES} trajectories, else ${cap}`;
}

/** A rollout of at least this many trajectories (tasks × group size) pools by default. */
export const POOL_DEFAULT_MIN_TRAJECTORIES = 8;
/** Default idle limit of a pre-booted worker, seconds. */
export const POOL_DEFAULT_IDLE_S = 120;

/**
 * The pool a run gets from `--pool`/`--pool-idle` (given or defaulted), or undefined for none.
 * Default size: the run's concurrency (one ready worker per slot), capped by its trajectories. Pure.
 */
export function resolvePool(o: {
  readonly command: "rollout" | "eval" | "serve";
  readonly trajectories: number;
  readonly concurrency: number;
  readonly size?: number;
  readonly idleS?: number;
  /** `--reuse`: trajectories one worker serves (default {@link REUSE_DEFAULT}). */
  readonly reuse?: number;
}): { readonly size: number; readonly idleMs: number; readonly reuse: number } | undefined {
  const size =
    o.size ??
    (poolByDefault(o) ? Math.min(o.concurrency, o.command === "serve" ? o.concurrency : o.trajectories) : 0);
  if (size <= 0) return undefined;
  return { size, idleMs: (o.idleS ?? POOL_DEFAULT_IDLE_S) * 1000, reuse: o.reuse ?? REUSE_DEFAULT };
}

/** The progress event of a pool state. Pure. */
export function poolEvent(s: PoolState): Extract<ProgressEvent, { type: "pool" }> {
  return {
    type: "pool",
    idle: s.idle,
    booting: s.booting,
    pooled: s.pooled,
    cold: s.cold,
    ...(s.unavailable ? { unavailable: s.unavailable } : {}),
  };
}
