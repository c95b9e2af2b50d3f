/**
 * Where the runs and evals under a viewer's root are: every dir holding `run.json` (a run) or
 * `report.json` (an eval), nested ones included (validate's `runs/validate-<id>/<task>/`, an eval's
 * `evals/<id>/`), found by a bounded walk that never descends into a run or an eval.
 */

/** What the walk may ask of the tree (the viewer's safe root, or a dummy in tests). */
export interface RefProbe {
  listDirs(segs: readonly string[]): Promise<string[]>;
  has(segs: readonly string[], file: string): Promise<boolean>;
}

/** How deep below the root a run or eval is looked for, and how many dirs are opened at most. */
export const FIND_LIMITS: Readonly<{ depth: number; dirs: number }> = { depth: 4, dirs: 2000 };

/** Dirs that hold a run's or an eval's own parts, never other runs. */
const SKIP = new Set(["trajectories", "node_modules", ".git"]);

export interface FoundRefs {
  readonly runs: string[][];
  readonly evals: string[][];
  /** The walk stopped at FIND_LIMITS.dirs: some deeper runs may be missing. */
  readonly truncated: boolean;
}

/** The runs and evals under the root, breadth first (shallow ones first), bounded by `limits`. */
export async function findRefs(probe: RefProbe, limits = FIND_LIMITS): Promise<FoundRefs> {
  const runs: string[][] = [];
  const evals: string[][] = [];
  let queue: string[][] = [[]];
  let opened = 0;
  for (let depth = 0; depth <= limits.depth && queue.length; depth++) {
    const next: string[][] = [];
    for (const segs of queue) {
      if (opened++ >= limits.dirs) return { runs, evals, truncated: true };
      if (await probe.has(segs, "run.json")) runs.push(segs);
      else if (await probe.has(segs, "report.json")) evals.push(segs);
      else if (depth < limits.depth)
        for (const d of (await probe.listDirs(segs).catch(() => [])).sort())
          if (!SKIP.has(d) && !d.startsWith(".")) next.push([...segs, d]);
    }
    queue = next;
  }
  return { runs, evals, truncated: false };
}
