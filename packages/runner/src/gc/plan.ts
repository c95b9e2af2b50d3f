import type { Owner } from "./owner.js";
import {
  isStaleOwnerless,
  isStaleTemp,
  type OwnerlessDir,
  STALE_AFTER_MS,
  type TempFile,
} from "./stale-temps.js";

/**
 * The sweep's decision, as a pure function of what was found: which resources belong to owners
 * that are gone, and in which order to remove them — processes (of dead cgroups) → containers →
 * mounts (deepest first) → cgroups (deepest first) → directories (deepest first). Resources of a
 * live owner, and anything no owner can be found for, are left alone.
 */

/** A directory with an `owner.json` (rollout scratch dir, fork, worker state). */
export interface OwnedDir {
  readonly path: string;
  readonly owner: Owner;
  readonly kind: string;
}

/** A worker's cgroup (one path per v1 hierarchy), owner from its name. */
export interface OwnedCgroup {
  readonly path: string;
  readonly owner: Owner;
}

/** A podman container labelled with its owner. */
export interface OwnedContainer {
  readonly name: string;
  readonly owner: Owner;
}

/** What a sweep found on this machine. */
export interface Inventory {
  readonly dirs: readonly OwnedDir[];
  readonly cgroups: readonly OwnedCgroup[];
  readonly containers: readonly OwnedContainer[];
  /** Every mount point of this mount namespace (from /proc/self/mountinfo). */
  readonly mounts: readonly string[];
  /** Atomic-write temps (`.<name>.<pid>.<rand>.tmp`) found under the run roots. */
  readonly temps?: readonly TempFile[];
  /** Snapshot builds' scratch dirs (`<cache>/tmp/<key16>-<pid>-<hex8>`). */
  readonly cacheTemps?: readonly TempFile[];
  /** Directories without owner.json under the flakegym roots. */
  readonly ownerless?: readonly OwnerlessDir[];
}

/** What judges the owner-less leftovers: the live pids among the temps' and the time. */
export interface StaleJudge {
  readonly livePids: ReadonlySet<number>;
  readonly nowMs: number;
  readonly afterMs?: number;
}

export type SweepAction =
  | { readonly kind: "kill"; readonly cgroup: string }
  | { readonly kind: "container"; readonly name: string }
  | { readonly kind: "unmount"; readonly path: string }
  | { readonly kind: "cgroup"; readonly path: string }
  | { readonly kind: "dir"; readonly path: string }
  /** A dead writer's atomic-write temp file. */
  | { readonly kind: "temp"; readonly path: string }
  /** A dead snapshot build's scratch tree in the cache. */
  | { readonly kind: "cache-temp"; readonly path: string }
  /** An empty directory its maker died before owning (removed only while empty). */
  | { readonly kind: "empty-dir"; readonly path: string }
  /** A dead Harbor environment build's scratch copy in the cache (gc/harbor-trees.ts). */
  | { readonly kind: "harbor-scratch"; readonly path: string }
  /** A built Harbor tree nobody uses, unused for longer than asked (`--harbor-unused-days`). */
  | { readonly kind: "harbor-tree"; readonly name: string; readonly why: string };

export interface SweepPlan {
  readonly actions: readonly SweepAction[];
  /** How many resources were left alone because their owner still runs. */
  readonly live: number;
}

/** Owners are compared by this key. Pure. */
export function ownerKey(o: Owner): string {
  return `${o.pid}:${o.startTime}:${o.bootId}:${o.pidNs ?? ""}`;
}

function under(path: string, dir: string): boolean {
  return path === dir || path.startsWith(dir.endsWith("/") ? dir : `${dir}/`);
}

const deepestFirst = (a: string, b: string) =>
  b.split("/").length - a.split("/").length || b.localeCompare(a);

/**
 * Plans the removal of everything whose owner is not in `alive` (keys of {@link ownerKey}).
 * A mount is removed only when it lies inside a dead owner's directory and inside no live one's.
 * Pure.
 */
export function planSweep(inv: Inventory, alive: ReadonlySet<string>, judge?: StaleJudge): SweepPlan {
  const isDead = (o: Owner) => !alive.has(ownerKey(o));
  const deadDirs = inv.dirs.filter((d) => isDead(d.owner)).map((d) => d.path);
  const liveDirs = inv.dirs.filter((d) => !isDead(d.owner)).map((d) => d.path);
  const deadCgroups = inv.cgroups.filter((c) => isDead(c.owner)).map((c) => c.path);
  const deadContainers = inv.containers.filter((c) => isDead(c.owner)).map((c) => c.name);
  const mounts = [...new Set(inv.mounts)].filter(
    (m) => deadDirs.some((d) => under(m, d)) && !liveDirs.some((d) => under(m, d)),
  );
  // a dead dir inside a live one (never made that way) is left with its parent
  const dirs = deadDirs.filter((d) => !liveDirs.some((l) => under(d, l)));
  const live =
    liveDirs.length +
    (inv.cgroups.length - deadCgroups.length) +
    (inv.containers.length - deadContainers.length);
  return {
    actions: [
      ...[...deadCgroups].sort(deepestFirst).map((cgroup) => ({ kind: "kill" as const, cgroup })),
      ...[...deadContainers].sort().map((name) => ({ kind: "container" as const, name })),
      ...mounts.sort(deepestFirst).map((path) => ({ kind: "unmount" as const, path })),
      ...[...deadCgroups].sort(deepestFirst).map((path) => ({ kind: "cgroup" as const, path })),
      ...[...new Set(dirs)].sort(deepestFirst).map((path) => ({ kind: "dir" as const, path })),
      ...staleActions(inv, judge),
    ],
    live,
  };
}

/** The owner-less leftovers judged stale: temps of dead pids, old empty dirs (deepest first). Pure. */
function staleActions(inv: Inventory, judge: StaleJudge | undefined): SweepAction[] {
  if (!judge) return [];
  const after = judge.afterMs ?? STALE_AFTER_MS;
  const temps = (inv.temps ?? []).filter((t) => isStaleTemp(t, judge.livePids, judge.nowMs, after));
  const empty = (inv.ownerless ?? []).filter((d) => isStaleOwnerless(d, judge.nowMs, after));
  const cache = (inv.cacheTemps ?? []).filter((t) => isStaleTemp(t, judge.livePids, judge.nowMs, after));
  return [
    ...temps.map((t) => ({ kind: "temp" as const, path: t.path })),
    ...cache.map((t) => ({ kind: "cache-temp" as const, path: t.path })),
    ...empty
      .map((d) => d.path)
      .sort(deepestFirst)
      .map((path) => ({ kind: "empty-dir" as const, path })),
  ];
}
