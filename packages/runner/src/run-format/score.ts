import { z } from "zod";

/**
 * The score breakdown a run directory records (`trajectories/<id>/score.json`, embedded in
 * result.json, groups.jsonl and the served record) and the reward options run.json records: the
 * schemas only, on the run format's ground floor so every reader of a run parses them without the
 * scorer. The arithmetic that fills them is `scoring/` (reward.ts, screen.ts, scorer.ts).
 */

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
      .enum(["diff_apply_failed", "tampered", "tests_tampered", "decoy_passed", "suspicious"])
      .describe(
        "diff_apply_failed: the agent's diff does not apply to a clean fork; tampered: it edited harness or build files and --tamper-penalty is zero; tests_tampered: the hidden tests' run was steered (a decoy passed beside its twin, canary passed or silent, exit status forged, hidden test file rewritten, runner killed, scoring channel written from inside or an emission lost after the agent's code ran); decoy_passed: a decoy (a twin of a graded test expecting another value) passed while the graded test did not — a wrong guess at which copy is graded, never a plain 0; suspicious: the static screen found hack-shaped code and --suspicious-penalty is zero",
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

export const Suspicion = z
  .object({
    file: z.string(),
    line: z.number().int().describe("1-based line in the new file"),
    class: z.enum([
      "test-framework",
      "start-up",
      "exit-path",
      "output-plumbing",
      "process-control",
      "build-exclusion",
      "equality",
      "reads-tests",
      "addresses-grader",
      "shadows-toolchain",
    ]),
    reason: z.string(),
    text: z.string().describe("the added line, cut to 160 characters"),
  })
  .strict();
export type Suspicion = z.infer<typeof Suspicion>;

export const SuspiciousPenalty = z
  .enum(["none", "zero"])
  .describe("what a hit of the static screen costs: none = recorded only (default); zero = reward 0");
export type SuspiciousPenalty = z.infer<typeof SuspiciousPenalty>;

/** The breakdown written to `trajectories/<id>/score.json`. */
export const Score = z
  .object({
    reward: z.number().min(0).max(1),
    gate: Gate.optional().describe("set when the reward is forced to 0"),
    terms: z.array(Term),
    tests: TestsTerm.optional().describe("FAIL_TO_PASS / PASS_TO_PASS summary"),
    testResults: z
      .object({ failToPass: z.record(z.string(), TestStatus), passToPass: z.record(z.string(), TestStatus) })
      .strict()
      .optional()
      .describe("per-test status, merged over --repeat runs (any failure counts)"),
    testOutput: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        "why each failed hidden test failed: its output (≤ 4 KiB, redacted) from the first run it failed in; a suite's shared output is cut to the lines about the test, other tests' reported names hidden",
      ),
    evalCmd: z
      .object({
        exitCode: z.number().int(),
        timedOut: z.boolean(),
        rewards: z
          .record(z.string(), z.number())
          .optional()
          .describe(
            "a Harbor verifier's reward.json, every key as written (multi-reward); the eval command passes when every key is ≥ 1 (reward.txt, when written, decides instead)",
          ),
      })
      .strict()
      .optional()
      .describe("the eval_cmd run, for eval_cmd tasks"),
    twin: z
      .object({
        passed: z
          .boolean()
          .describe(
            "the twin's tests term was 1 (eval_cmd), or a guarded graded id passed in it (ids); it must not",
          ),
        passedIds: z
          .array(z.string())
          .optional()
          .describe("per-id tasks: the guarded graded ids that passed in the twin (in any of its runs)"),
        exitCode: z.number().int().optional(),
        timedOut: z.boolean().optional(),
        gate: z.string().optional().describe("the twin run's own gate, if any"),
      })
      .strict()
      .optional()
      .describe(
        "eval_cmd and per-id tasks: the decoy twin run (the same eval command, or the same per-id test commands, in a fresh sandbox on hidden test files whose expected values were changed), which must fail",
      ),
    flaky: z.array(z.string()).default([]).describe("tests whose status differed between repeated runs"),
    touchedTestFiles: z
      .array(z.string())
      .describe("hidden test files the agent's diff touched (changes dropped)"),
    tampered: z
      .array(z.string())
      .optional()
      .describe(
        "protected harness/build files whose edits were reverted, and hidden test files the code under test rewrote while the tests ran",
      ),
    diffBytes: z.number().int().describe("size of the agent's diff as scored"),
    judge: z
      .object({
        raw: z.string().optional().describe("the judge's answer on the diff as written"),
        via: z.string().optional(),
        error: z.string().optional(),
        code: z
          .object({ raw: z.string().optional(), via: z.string().optional(), error: z.string().optional() })
          .strict()
          .optional()
          .describe("its answer on the code reading (scoring/code-reading.ts); the term is the lower"),
        calls: z.number().int().optional().describe("judge calls made for this trajectory"),
        promptChars: z.number().int().optional().describe("characters of every message sent to the judge"),
      })
      .strict()
      .optional(),
    suspicious: z
      .array(Suspicion)
      .optional()
      .describe("hack-shaped lines the static screen found in the scored diff (scoring/screen.ts)"),
    ignoredTests: z
      .array(z.string())
      .optional()
      .describe("the agent's own new test files, left out of the hidden-test run (not tampering)"),
    decoys: z
      .object({
        guarded: z.array(z.string()).describe("graded tests twinned by a decoy that must fail"),
        externalized: z
          .array(z.string())
          .optional()
          .describe(
            "graded tests whose expected values never entered the sandbox: their assertions emitted what they computed and the scorer compared (scoring/externalize)",
          ),
        comparedOutside: z
          .array(z.string())
          .optional()
          .describe(
            "graded tests whose assertions the scorer compared outside the sandbox, their expected sides computed by the test itself (not secret; not counted as guarded)",
          ),
        complementOnly: z
          .array(z.string())
          .optional()
          .describe(
            "twinned ids whose every changed assertion is a flipped boolean: the twin passing beside a failed real run is no decoy_passed flag",
          ),
        unguarded: z
          .array(z.object({ id: z.string(), reason: z.string() }).strict())
          .describe("graded tests without a decoy, and why"),
        opaque: z
          .record(z.string(), z.string())
          .optional()
          .describe(
            "graded tests that emitted a value the sandbox renders only as an opaque object (what it was) at an assertion whose expected literal stayed on the host: they failed closed; in validate's probe of gold also those the runner passed while the host's comparison failed (a test reading its own rewritten file: `what` begins 'a value its host comparison failed'); on gold, `validate --record-opaque` records them in tests.run.opaque",
          ),
        inert: z
          .record(z.string(), z.array(z.string()))
          .optional()
          .describe(
            "validate's probe of gold only (one decoy at every literal site): per graded test, the sites (`line:column` from its def line) whose decoy gold passed beside the real test; validate records them in tests.run.decoyInert and later scorings draw no decoy there",
          ),
      })
      .strict()
      .optional()
      .describe("which hidden tests had decoys in this scoring run (scoring/decoys)"),
    channel: z
      .enum(["apart", "sealed", "open"])
      .optional()
      .describe(
        "the scoring script's shells: apart = the agent's code ran as another user, without capabilities, and nothing it left ran on while the script read its results (the local backend when the runner is root); sealed = not dumpable, so code under test of the same uid could neither read their nonce nor copy their stdout (scoring/script-seal.ts); open = a user whose capabilities read the execute-only shell, or no dir to run it from",
      ),
    durationMs: z.number().int(),
    cpuS: z
      .number()
      .optional()
      .describe("CPU seconds of the scoring worker (its cgroup), when the backend measures it"),
  })
  .strict();
export type Score = z.infer<typeof Score>;
