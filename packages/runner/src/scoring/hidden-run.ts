import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { createDeadline } from "@flakegym/nomad-jobs";
import { FlakegymError } from "../errors.js";
import type { LoadedTask } from "../tasks/catalog.js";
import type { TestCommand } from "../tasks/task-spec.js";
import type { Worker } from "../workers/types.js";
import { hiddenTestsOf } from "./hidden-tests.js";
import { newCanary } from "./results.js";
import { scoredTestFiles, scoringPlanOf } from "./score-parts.js";
import {
  endedBy,
  type HiddenTestVerdict,
  hiddenVerdicts,
  runScript,
  type ScoreOptions,
  scriptEnd,
} from "./scorer.js";
import { expectedSteps, type ParsedScoring, scriptTimeoutMs, testStep } from "./script.js";

/**
 * A catalog task's hidden tests run the scorer's way, without the reward: the same one script
 * (scoring/script.ts: the diff applied, the hidden tests installed, the canary added, the test
 * files reset and checked around every command), the same parsing and the same verdicts
 * (`hiddenVerdicts`), read per test. The catalog's fail→pass proof runs through it.
 */

export interface TestResult {
  readonly id: string;
  readonly kind: TestCommand["kind"];
  readonly passed: boolean;
  readonly exitCode: number;
  readonly timedOut: boolean;
  readonly durationMs: number;
  /** The last lines of the test command's combined output (a suite's: the whole run's). */
  readonly tail: string;
}

export interface HiddenTestReport {
  readonly results: TestResult[];
  /** Why the run cannot be believed (the scorer's tests_tampered gate); empty: nothing seen. */
  readonly tampering: string[];
  /** Every fail_to_pass, pass_to_pass and eval_cmd test passed, and nothing was tampered with. */
  readonly solved: boolean;
}

export interface HiddenRunOptions {
  /**
   * Apply the task's reference solution first: the script's diff, applied as it is (the task's own,
   * not guarded like an agent's edits to hidden test and protected files).
   */
  readonly withSolution?: boolean;
  /** Deadline of one test command (default 10 minutes). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
}

/** The scorer's options for the hidden tests alone: one run, no build, lint or judge term. */
const testsOnly = (task: LoadedTask): ScoreOptions => ({
  partialCredit: "none",
  weights: { tests: 1, build: 0, lint: 0, judge: 0 },
  repeat: 1,
  termTimeoutMs: 0,
  taskPrompt: task.spec.prompt,
});

const tailOf = (output: string) => output.trim().split("\n").slice(-15).join("\n");

/**
 * One run's per-test results from the scorer's verdicts; each test's output from its own step (a
 * suite's tests share step 0). Pure.
 */
export function hiddenReportOf(
  parsed: ParsedScoring,
  verdicts: readonly HiddenTestVerdict[],
  suite: boolean,
  tampering: readonly string[],
): HiddenTestReport {
  const results = verdicts.map((v, i): TestResult => {
    const step = parsed.steps.get(testStep(0, suite ? 0 : i));
    return {
      ...v,
      durationMs: (step?.seconds ?? 0) * 1000,
      tail: step
        ? tailOf(step.output)
        : "(no output: the test did not report — timed out, or its run was killed)",
    };
  });
  return {
    results,
    tampering: [...tampering],
    solved: results.length > 0 && results.every((t) => t.passed) && tampering.length === 0,
  };
}

/**
 * Runs `task`'s hidden tests in `worker` (a fresh fork of the task's snapshot, exec only) with the
 * scorer's one script: the hidden tests are installed by the script (after the reference solution
 * with `withSolution`), never beforehand.
 */
export async function runHiddenTests(
  worker: Worker,
  task: LoadedTask,
  opts: HiddenRunOptions = {},
): Promise<HiddenTestReport> {
  const hidden = await hiddenTestsOf(task, opts.timeoutMs ?? 10 * 60_000);
  const diff = opts.withSolution ? await readFile(task.paths.solution, "utf8") : "";
  const o = testsOnly(task);
  const canary = hidden.suite ? newCanary(hidden.suite.canary, randomBytes(6).toString("hex")) : undefined;
  const plan = scoringPlanOf(hidden, o, diff, scoredTestFiles(hidden, o), canary);
  using deadline = createDeadline({
    signals: [opts.signal],
    // the exec has the script's own deadline; this one bounds the payload writes around it too
    timeout: {
      limit: `hidden tests of ${task.spec.id} in worker ${worker.id}`,
      ms: scriptTimeoutMs(plan) + 60_000,
    },
  });
  const { parsed, exec } = await runScript(worker, plan, deadline.signal);
  const end = scriptEnd(parsed, exec, deadline.signal.aborted, expectedSteps(plan));
  if (end.kind === "apply_failed")
    throw new FlakegymError(
      "E_PATCH",
      `the reference solution of task ${task.spec.id} (${task.paths.solution}) did not apply in worker ${worker.id}: ${end.output.trim()}`,
      { hint: "regenerate the task's solution.patch against its snapshot's base commit" },
    );
  const ended = endedBy(worker.id, exec, end);
  const { verdicts } = hiddenVerdicts(parsed, hidden, o, canary, 1);
  return hiddenReportOf(parsed, verdicts.runs[0] ?? [], hidden.suite !== undefined, [
    ...ended,
    ...verdicts.tampering,
  ]);
}
