import type { OutcomeKind } from "@flakegym/cline-vendor";
import { match } from "ts-pattern";
import type { BackendKind } from "../types.js";

/**
 * Worker reuse's decisions as pure functions of data (issue 47): whether a worker that served a
 * trajectory is reset and serves the next one of its key, and whether a reset left it clean. The
 * pool (pool-take.ts, pool-reuse.ts) only carries them out.
 */

/**
 * Tasks a worker serves by default before it is retired (`--reuse`; docs/design/performance.md says why):
 * the reset is proven (reset-worker.ts, the clean-slate suite) and the agent cannot read the core's
 * heap (sealed-binary.ts); the memory bound retires a worker earlier when its core grows.
 */
export const REUSE_DEFAULT = 8;
/** Tasks one worker serves at most, whatever `--reuse` asks (its core's heap and logs grow with each). */
export const REUSE_MAX = 64;
/** A reused worker's memory (its kept processes' RssAnon, after the reset) may exceed its first-ready reading by this much. */
export const REUSE_MEMORY_GROWTH_MB = 96;

/**
 * Growth over the first-ready reading (MiB) from which a reset has the core collect its garbage
 * before the memory rule reads it: half the bound. A full collection costs the core ≈ 0.13 CPU-s;
 * below this the garbage of a task or two is left to V8 (the rule cannot retire the worker there).
 */
export const REUSE_COLLECT_FROM_MB = REUSE_MEMORY_GROWTH_MB / 2;

/**
 * Whether a reset has the core collect its garbage (core-collect.ts) before judging its memory:
 * when the reading without it is at or past {@link REUSE_COLLECT_FROM_MB} over the first-ready
 * one, or either reading is missing (then the rule reads after the collection, as before). Pure.
 */
export function needsCoreCollection(
  memoryMb: number | undefined,
  firstMemoryMb: number | undefined,
  fromMb = REUSE_COLLECT_FROM_MB,
): boolean {
  if (memoryMb === undefined || firstMemoryMb === undefined) return true;
  return memoryMb - firstMemoryMb >= fromMb;
}

/** What the pool knows when a trajectory hands its worker back. */
export interface ReleaseFacts {
  readonly backend: BackendKind;
  /** Whether the backend can reset a worker in place (local bubblewrap only). */
  readonly resettable: boolean;
  /** Trajectories this worker has served, this one included. */
  readonly served: number;
  /** `--reuse`: trajectories a worker serves at most. */
  readonly reuse: number;
  /** How the trajectory ended; undefined when its owner could not tell (an exception). */
  readonly outcome: OutcomeKind | undefined;
  /** The worker ended on its own (a limit, a crash) before it was handed back. */
  readonly workerEnded: boolean;
  readonly poolClosed: boolean;
}

export type ReuseDecision =
  | { readonly action: "reset" }
  | { readonly action: "retire"; readonly why: string };

/**
 * Whether an outcome leaves the core in a state we know: the agent finished or gave up on its own
 * (`completed`, `agent_error`). Everything else is a doubt — a limit or a timeout cut it short
 * (a command may still run, a request still be in flight), the model server failed mid-stream,
 * the machinery failed. Pure.
 */
export function isCleanOutcome(kind: OutcomeKind): boolean {
  return match(kind)
    .with("completed", "agent_error", () => true)
    .with("limits_exceeded", "timeout", "policy_error", "infra_error", () => false)
    .exhaustive();
}

/** Whether a worker handed back after a trajectory is reset for the next one, or retired (and why). Pure. */
export function decideRelease(f: ReleaseFacts): ReuseDecision {
  const retire = (why: string): ReuseDecision => ({ action: "retire", why });
  if (f.backend !== "local" || !f.resettable)
    return retire(`the ${f.backend} backend cannot prove a reset: one trajectory per worker`);
  if (f.poolClosed) return retire("the pool is closed");
  if (f.workerEnded) return retire("the worker ended before it was handed back");
  if (f.served >= Math.min(f.reuse, REUSE_MAX)) return retire(`served ${f.served} of --reuse ${f.reuse}`);
  if (f.outcome === undefined) return retire("the trajectory ended without an outcome");
  if (!isCleanOutcome(f.outcome)) return retire(`the trajectory's outcome (${f.outcome}) is not clean`);
  return { action: "reset" };
}

/** What a reset found, as the backend measured it after doing it. */
export interface ResetReport {
  /** Host pids of processes other than the kept ones (supervisor, host, core, the sandbox's init) still in the worker. */
  readonly strayPids: readonly number[];
  /** Kept processes no longer alive (the core or its supervisor died). */
  readonly keptGone: readonly number[];
  /**
   * Kept processes (bwrap's init aside) not running from a sealed, execute-only binary: their
   * heaps, which hold the previous trajectory, are readable by the next agent (sealed-binary.ts).
   * Absent: not checked (a backend without kept processes).
   */
  readonly unsealedPids?: readonly number[];
  /** Paths (relative to the worker's state) whose content is not the pristine one. */
  readonly dirtyPaths: readonly string[];
  /** Mounts left on the workspace/deps slot beyond its own bind. */
  readonly slotMounts: number;
  /** Fields of the core's state that differ from the state it had when first ready. */
  readonly stateDiff: readonly string[];
  /** The worker's memory now and when it was first ready, MiB (undefined: not measured). */
  readonly memoryMb?: number;
  readonly firstMemoryMb?: number;
  /** A step failed outright (its message). */
  readonly failure?: string;
  /**
   * Why the core's garbage collection before the memory reading did not happen (core-collect.ts);
   * absent when it did or was not needed. Not a doubt by itself: the memory rule reads what the
   * core then holds.
   */
  readonly coreGcMissed?: string;
  /** Whether the core collected its garbage before the memory reading ({@link needsCoreCollection}). */
  readonly coreCollected?: boolean;
}

/** Whether a reset left the worker as it was when first ready; else every reason it is not. Pure. */
export function resetVerdict(
  r: ResetReport,
  growthMb = REUSE_MEMORY_GROWTH_MB,
): { readonly clean: true } | { readonly clean: false; readonly why: string } {
  const why: string[] = [];
  if (r.failure) why.push(`reset failed: ${r.failure}`);
  if (r.strayPids.length)
    why.push(`${r.strayPids.length} process(es) survived the kill (${r.strayPids.join(",")})`);
  if (r.keptGone.length) why.push(`the core's processes ended (${r.keptGone.join(",")})`);
  if (r.unsealedPids?.length)
    why.push(`the agent could read the heap of kept process(es) ${r.unsealedPids.join(",")} (not sealed)`);
  if (r.slotMounts > 0) why.push(`${r.slotMounts} mount(s) left on the workspace slot`);
  if (r.dirtyPaths.length) why.push(`not pristine: ${r.dirtyPaths.slice(0, 5).join(", ")}`);
  if (r.stateDiff.length) why.push(`core state differs: ${r.stateDiff.slice(0, 5).join(", ")}`);
  if (r.memoryMb === undefined || r.firstMemoryMb === undefined) {
    if (!r.failure) why.push("memory not measured");
  } else if (r.memoryMb - r.firstMemoryMb > growthMb)
    why.push(`memory grew ${Math.round(r.memoryMb - r.firstMemoryMb)} MiB (bound ${growthMb})`);
  return why.length ? { clean: false, why: why.join("; ") } : { clean: true };
}

/**
 * The processes a reset kills: every pid in the worker but the kept ones (the sandbox's init, the
 * supervisor, cline-host, cline-core, recorded when the worker was first ready). Pure.
 */
export function pidsToKill(inWorker: readonly number[], kept: readonly number[]): number[] {
  const keep = new Set(kept);
  return inWorker.filter((p) => !keep.has(p));
}

/**
 * Fields of the core's state (`getLatestState`) a reset does not bring back: `workspaceRoots`,
 * which the first task sets to /workspace and every later task sets to the same. After the reset
 * (`resetState`, which reloads the state from the restored files) every other field must equal
 * the state the core had when first ready — provider, settings, approvals, rules and workflow
 * toggles, MCP and task history included.
 */
export const STATE_FIELDS_NOT_RESET: ReadonlySet<string> = new Set(["workspaceRoots"]);

/** Names of top-level fields of `now` that differ from `pristine` (outside the `ignored` ones). Pure. */
export function stateDiffOf(
  pristine: Readonly<Record<string, unknown>>,
  now: Readonly<Record<string, unknown>>,
  ignored: ReadonlySet<string> = STATE_FIELDS_NOT_RESET,
): string[] {
  const keys = new Set([...Object.keys(pristine), ...Object.keys(now)]);
  return [...keys]
    .filter((k) => !ignored.has(k))
    .filter((k) => canonical(pristine[k]) !== canonical(now[k]))
    .sort();
}

/** JSON with object keys sorted (so two equal states compare equal). Pure. */
export function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === "object" && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : x,
  );
}

/**
 * Paths whose entry differs between two listings of a dir (`path → what it is`), the `ignored`
 * ones aside: added, removed or changed, sorted. Pure.
 */
export function treeDiffOf(
  before: Readonly<Record<string, string>>,
  after: Readonly<Record<string, string>>,
  ignored: ReadonlySet<string> = new Set(),
): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((k) => !ignored.has(k) && before[k] !== after[k]).sort();
}

/**
 * Whether a process's namespaces are the sandbox's own — its mount AND its IPC namespace both
 * differ from ours — so a wipe run inside them cannot reach the host's /dev/shm or IPC. Pure.
 */
export function sandboxNamespaces(n: {
  readonly self: { readonly mnt: string; readonly ipc: string };
  readonly target: { readonly mnt: string; readonly ipc: string };
}): boolean {
  return n.target.mnt !== n.self.mnt && n.target.ipc !== n.self.ipc;
}

/** The pool's closing line on reuse (undefined when nothing was reset). Pure. */
export function reuseSummary(c: {
  readonly pooled: number;
  readonly reused: number;
  readonly resetRetired: number;
}): string | undefined {
  if (c.reused === 0 && c.resetRetired === 0) return undefined;
  return `worker reuse: ${c.reused} of ${c.pooled} pooled trajectories ran on a reset worker; ${c.resetRetired} worker(s) retired after a reset`;
}
