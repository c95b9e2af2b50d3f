import type { GuardReport } from "../decoys/guard.js";

/** How a task's graded tests are guarded: externalized, by a decoy, or not at all. */
export interface GuardCoverage {
  readonly graded: number;
  readonly externalized: number;
  readonly decoyed: number;
  /** Not guarded, but compared outside (expected sides computed by the test). */
  readonly comparedOutside: number;
  readonly unguarded: number;
  /** (externalized + decoyed) / graded; 1 with nothing graded. */
  readonly share: number;
}

/** The coverage of one guard report (a scoring run's, or `tasks check`'s). Pure. */
export function guardCoverage(r: GuardReport): GuardCoverage {
  const externalized = r.externalized?.length ?? 0;
  const decoyed = r.guarded.length;
  const unguarded = r.unguarded.length;
  const comparedOutside = r.comparedOutside?.length ?? 0;
  const graded = externalized + decoyed + unguarded + comparedOutside;
  return {
    graded,
    externalized,
    decoyed,
    unguarded,
    comparedOutside,
    share: graded ? (externalized + decoyed) / graded : 1,
  };
}
