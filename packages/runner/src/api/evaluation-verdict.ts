import { z } from "zod";
import type { HintsUsed, Metrics } from "../contract/artifacts.js";
import { meanReward, scoreOfSummary, type TestSummary } from "../contract/test-summary.js";
import type { Outcome } from "../run-format/schema.js";

/**
 * Whether an evaluation produced a real signal, and its score (pure). An evaluation counts only when
 * it measured something: the stage's own `metrics.score`, or a test command that ran (not "not
 * found", not "not executable") and whose output a known runner's summary was read from. A target
 * with test hints whose command did not run, or whose output was not understood, has no score —
 * never the rollout's mean reward in its place. Only a target without any test command (a dataset
 * file) is scored by the mean reward of the last rollout's samples.
 */

export const ScoreSource = z.enum(["metrics", "test-summary", "mean-reward", "none"]);
export type ScoreSource = z.infer<typeof ScoreSource>;

export interface VerdictInput {
  readonly outcome: Outcome;
  readonly metrics?: Metrics;
  readonly summary?: TestSummary;
  readonly hintsUsed: HintsUsed;
  /** The target has commands to run (hints): its score must come from running them. */
  readonly hasHints: boolean;
  readonly rewards: readonly { reward: number }[];
}

export interface Verdict {
  readonly ok: boolean;
  readonly score: number | null;
  readonly source: ScoreSource;
  /** What the score is, or why there is none. */
  readonly reason: string;
}

/** Exit statuses of a shell whose command could not run: not executable, not found. */
export const NOT_RUN_EXIT = new Set([126, 127]);

export function evaluationVerdict(i: VerdictInput): Verdict {
  // a stage that hit a limit, timed out or lost its sandbox measured nothing, whatever it printed
  const fault = i.outcome.kind !== "completed" && i.outcome.kind !== "agent_error";
  const faultReason = `the evaluation stage ended ${i.outcome.kind}: ${i.outcome.detail}`;
  if (i.metrics && i.metrics.score !== null) {
    const ok = !fault && i.metrics.ok;
    return {
      ok,
      score: i.metrics.score,
      source: "metrics",
      reason: ok
        ? "the stage's metrics.json"
        : fault
          ? faultReason
          : "metrics.json says the evaluation did not run",
    };
  }
  const fromTests = i.summary ? scoreOfSummary(i.summary) : undefined;
  if (i.summary && fromTests !== undefined) {
    const s = i.summary;
    const counts = `${s.tool}: ${s.passed} passed, ${s.failed} failed, ${s.errors} errors, ${s.skipped} skipped`;
    if (fault) return { ok: false, score: null, source: "none", reason: `${faultReason} (${counts})` };
    return { ok: true, score: fromTests, source: "test-summary", reason: counts };
  }
  if (i.hasHints || i.hintsUsed.commands.length > 0) {
    const ran = i.hintsUsed.ok && i.hintsUsed.commands.length > 0;
    const what = i.hintsUsed.commands.join(" && ") || "(none)";
    return {
      ok: false,
      score: null,
      source: "none",
      reason: fault
        ? faultReason
        : ran && i.summary
          ? `the test command ran (${what}) but ${i.summary.tool} ran no tests: nothing was scored`
          : ran
            ? `the test command ran (${what}) but its output has no summary flakegym reads (pytest, unittest, vitest, jest, node --test, cargo test, go test, ctest): nothing was scored`
            : `the test command did not run (${what}): ${i.hintsUsed.reason}`,
    };
  }
  const mean = meanReward(i.rewards);
  if (mean !== undefined)
    return {
      ok: !fault,
      score: mean,
      source: "mean-reward",
      reason: `no test command: the mean reward of the last rollout's ${i.rewards.length} samples`,
    };
  return {
    ok: false,
    score: null,
    source: "none",
    reason: "nothing could be scored: no test command, no metrics.json score and no rollout samples",
  };
}
