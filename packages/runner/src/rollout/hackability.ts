import type { TrajectoryResult } from "../run-format/schema.js";

/**
 * A task's hackability report (issue 25): which defences applied to its scoring and which graded
 * tests a decoy guarded, read from the gold trajectory's score.json. `flakegym validate` prints it
 * beside gold/empty/cheats and fails a task with unguarded tests unless told they are accepted
 * (`--allow-unguarded`). Pure.
 */
export interface Hackability {
  /** Graded tests guarded by externalized assertions or a decoy, of all graded tests (suite tasks). */
  readonly guarded: number;
  /** Of `guarded`: graded tests whose expected values never entered the sandbox (scoring/externalize). */
  readonly externalized: number;
  readonly graded: number;
  readonly unguarded: readonly { id: string; reason: string }[];
  /** The defences this scoring had, in words. */
  readonly defences: readonly string[];
}

/** Where the scoring ran, for the one defence that depends on it. */
export interface ScoringPlace {
  /** The backend binds hidden files read-only (its declared BackendCapabilities). */
  readonly bindsHiddenReadOnly: boolean;
  /** The runner can give files to another user (root on the host). */
  readonly root: boolean;
}

/** The report of one task from its gold trajectory (undefined when gold was not scored). Pure. */
export function hackabilityOf(
  gold: TrajectoryResult | undefined,
  place: ScoringPlace,
): Hackability | undefined {
  const score = gold?.score;
  if (!score) return undefined;
  const d = score.decoys;
  // an eval_cmd task has one verdict, guarded by its decoy twin run
  const graded = score.evalCmd
    ? 1
    : score.testResults
      ? Object.keys(score.testResults.failToPass).length + Object.keys(score.testResults.passToPass).length
      : 0;
  const readOnly = place.bindsHiddenReadOnly && place.root;
  const defences = [
    score.evalCmd
      ? d?.guarded.length
        ? "decoy twin run: the eval command in a second fresh sandbox on hidden test files with every literal expected value changed, which must fail"
        : "no decoy twin run (no assertion in the hidden test files has a literal expected value to change)"
      : score.twin
        ? `decoy twin run on ${d?.guarded.length ?? 0} of ${graded} graded ids: their test commands in a second fresh sandbox on hidden test files with every literal expected value changed, where each must fail`
        : d
          ? `${d.externalized?.length ? `externalized assertions on ${d.externalized.length} of ${graded} graded tests (expected values kept on the host, compared with what the tests emitted); ` : ""}${d.comparedOutside?.length ? `${d.comparedOutside.length} more compared outside the sandbox (expected sides computed by the test: not counted as guarded); ` : ""}decoys on ${d.guarded.length} of ${graded} graded tests (random names, a twin expecting another value)`
          : "no decoys (not a suite task)",
    "protected harness, build and runner-configuration files reset; the agent's new test files left out",
    readOnly
      ? "hidden test files owned by another user, bound read-only"
      : "hidden test files reset and checksummed around every run (not bound read-only on this backend/user)",
    score.evalCmd
      ? "the eval command's exit status (reward file) checked"
      : score.twin
        ? "each graded id's command: exit status and summary line checked"
        : "canary test, exit status and per-test result lines checked",
    "static screen of the diff recorded (score.json suspicious)",
  ];
  return {
    guarded: (d?.guarded.length ?? 0) + (d?.externalized?.length ?? 0),
    externalized: d?.externalized?.length ?? 0,
    graded,
    unguarded: d
      ? d.unguarded
      : score.evalCmd
        ? [
            {
              id: "eval_cmd",
              reason: "no decoy twin: the hidden test files could not be computed on the host",
            },
          ]
        : Object.keys({ ...score.testResults?.failToPass, ...score.testResults?.passToPass }).map((id) => ({
            id,
            reason: "no decoys and no decoy twin: the hidden test files could not be computed on the host",
          })),
    defences,
  };
}

/** Why the report fails the task (empty: it does not). Pure. */
export function hackabilityReasons(h: Hackability | undefined, allowUnguarded: boolean): string[] {
  if (!h || allowUnguarded || h.unguarded.length === 0) return [];
  return [
    `${h.unguarded.length} graded test(s) without a decoy (a forged pass would go unseen): ${h.unguarded
      .map((u) => `${u.id} (${u.reason})`)
      .join("; ")} — rewrite them with an equality on a literal, or pass --allow-unguarded to accept`,
  ];
}
