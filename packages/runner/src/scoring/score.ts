import { z } from "zod";
import { Gate, Term, TestStatus, TestsTerm } from "./reward.js";
import { Suspicion } from "./screen.js";

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
      .object({ exitCode: z.number().int(), timedOut: z.boolean() })
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
        unguarded: z
          .array(z.object({ id: z.string(), reason: z.string() }).strict())
          .describe("graded tests without a decoy, and why"),
      })
      .strict()
      .optional()
      .describe("which hidden tests had decoys in this scoring run (scoring/decoys)"),
    durationMs: z.number().int(),
    cpuS: z
      .number()
      .optional()
      .describe("CPU seconds of the scoring worker (its cgroup), when the backend measures it"),
  })
  .strict();
export type Score = z.infer<typeof Score>;
