import { match } from "ts-pattern";
import {
  Gate,
  PartialCredit,
  TamperPenalty,
  Term,
  TermName,
  TestResults,
  TestStatus,
  TestsTerm,
  Weights,
} from "../run-format/score.js";

export { Gate, PartialCredit, TamperPenalty, Term, TermName, TestResults, TestStatus, TestsTerm, Weights };

/** Pure reward arithmetic: test results and extra terms → a reward in [0, 1] and its breakdown. */

const count = (r: Record<string, TestStatus>) => ({
  passed: Object.values(r).filter((s) => s === "passed").length,
  total: Object.keys(r).length,
});

/** FAIL_TO_PASS / PASS_TO_PASS results → the tests term. No tests at all scores 0 (nothing proven). */
export function testsTerm(results: TestResults, partial: PartialCredit): TestsTerm {
  const f2p = count(results.failToPass);
  const p2p = count(results.passToPass);
  const total = f2p.total + p2p.total;
  const passed = f2p.passed + p2p.passed;
  const resolved = total > 0 && passed === total;
  const value = match(partial)
    .with("none", () => (resolved ? 1 : 0))
    .with("fraction", () => (total === 0 ? 0 : passed / total))
    .exhaustive();
  return { kind: "tests", value, resolved, failToPass: f2p, passToPass: p2p, partialCredit: partial };
}

/** An `eval_cmd` task: exit 0 within the deadline is 1, anything else 0. */
export function evalCmdValue(exitCode: number, timedOut: boolean): number {
  return exitCode === 0 && !timedOut ? 1 : 0;
}

/** The gate a tamper with protected files earns under `penalty`, if any. Pure. */
export function tamperGate(tampered: readonly string[], penalty: TamperPenalty): Gate | undefined {
  if (tampered.length === 0) return undefined;
  return match(penalty)
    .with("revert", () => undefined)
    .with("zero", () => ({
      reason: "tampered" as const,
      detail: `the diff edits protected harness/build files (${tampered.join(", ")}); --tamper-penalty zero`,
    }))
    .exhaustive();
}

/**
 * Weighted mean of the computed terms: Σ wᵢvᵢ / Σ wᵢ over terms with a value and weight > 0.
 * A gate forces 0. No weighted term with a value gives 0. The result is clamped to [0, 1].
 */
export function combine(terms: readonly Term[], gate?: Gate): number {
  if (gate) return 0;
  let num = 0;
  let den = 0;
  for (const t of terms) {
    if (t.value === null || t.weight <= 0) continue;
    num += t.weight * t.value;
    den += t.weight;
  }
  if (den === 0) return 0;
  return Math.min(1, Math.max(0, num / den));
}
