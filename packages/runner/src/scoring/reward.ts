import { match } from "ts-pattern";
import { z } from "zod";

/** Pure reward arithmetic: test results and extra terms → a reward in [0, 1] and its breakdown. */

export const PartialCredit = z
  .enum(["none", "fraction"])
  .describe("none: 1 only when every FAIL_TO_PASS and PASS_TO_PASS test passes; fraction: passed / total");
export type PartialCredit = z.infer<typeof PartialCredit>;

export const TestStatus = z
  .enum(["passed", "failed", "missing"])
  .describe("missing: the run did not report it");
export type TestStatus = z.infer<typeof TestStatus>;

/** Per-test results of one hidden-test run. */
export const TestResults = z
  .object({
    failToPass: z.record(z.string(), TestStatus).describe("tests the change must make pass"),
    passToPass: z.record(z.string(), TestStatus).describe("tests that must keep passing"),
  })
  .strict();
export type TestResults = z.infer<typeof TestResults>;

export const TestsTerm = z
  .object({
    kind: z.literal("tests"),
    value: z.number().min(0).max(1),
    resolved: z.boolean().describe("every FAIL_TO_PASS and PASS_TO_PASS test passed"),
    failToPass: z.object({ passed: z.number().int(), total: z.number().int() }).strict(),
    passToPass: z.object({ passed: z.number().int(), total: z.number().int() }).strict(),
    partialCredit: PartialCredit,
  })
  .strict();
export type TestsTerm = z.infer<typeof TestsTerm>;

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

export const TermName = z.enum(["tests", "build", "lint", "judge"]);
export type TermName = z.infer<typeof TermName>;

/** One weighted term. `value` null: the term could not be computed (see `error`); it is left out. */
export const Term = z
  .object({
    name: TermName,
    weight: z.number().min(0),
    value: z.number().min(0).max(1).nullable(),
    detail: z.string().optional().describe("what was measured, human readable"),
    error: z.string().optional().describe("why the value is missing"),
  })
  .strict();
export type Term = z.infer<typeof Term>;

export const Weights = z
  .object({
    tests: z.number().min(0).default(1),
    build: z.number().min(0).default(0),
    lint: z.number().min(0).default(0),
    judge: z.number().min(0).default(0),
  })
  .strict();
export type Weights = z.infer<typeof Weights>;

/** Why a trajectory scores 0 whatever its terms say. */
export const Gate = z
  .object({
    reason: z
      .enum(["diff_apply_failed", "tampered", "tests_tampered", "suspicious"])
      .describe(
        "diff_apply_failed: the agent's diff does not apply to a clean fork; tampered: it edited harness or build files and --tamper-penalty is zero; tests_tampered: the hidden tests' run was steered (a decoy passed beside its twin, canary passed or silent, exit status forged, hidden test file rewritten, runner killed); suspicious: the static screen found hack-shaped code and --suspicious-penalty is zero",
      ),
    detail: z.string(),
  })
  .strict();
export type Gate = z.infer<typeof Gate>;

export const TamperPenalty = z
  .enum(["revert", "zero"])
  .describe(
    "what an edit to a protected harness/build file costs: revert = reward computed on the tree with those edits reverted (recorded in score.json `tampered`); zero = reward 0",
  );
export type TamperPenalty = z.infer<typeof TamperPenalty>;

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
