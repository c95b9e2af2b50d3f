import type { Score } from "../rollout/schema.js";
import type { Worker } from "../workers/types.js";
import { dropPaths } from "./diff.js";
import { askJudge, type JudgeConfig, judgeMessages, parseJudgeScore } from "./judge.js";
import {
  combine,
  evalCmdValue,
  type Gate,
  type PartialCredit,
  type Term,
  type TestResults,
  type TestStatus,
  testsTerm,
  type Weights,
} from "./reward.js";

/**
 * Scores one trajectory in a FRESH worker (exec only) forked from the task's clean snapshot:
 * drop the agent's edits to hidden test files, apply the rest, add the hidden tests, run them
 * (`repeat` times, to catch flaky tests), then the optional build / lint / judge terms.
 */

/** One hidden-test command's verdict (the shape `runHiddenTests` reports). */
export interface HiddenTestVerdict {
  readonly id: string;
  readonly kind: "fail_to_pass" | "pass_to_pass" | "eval_cmd";
  readonly passed: boolean;
  readonly exitCode: number;
  readonly timedOut: boolean;
}

/** How the task's hidden tests get into, and run in, a worker (from the task catalog). */
export interface HiddenTestOps {
  /** Workspace-relative paths of the hidden test files (the agent's edits to them are dropped). */
  readonly testFiles: readonly string[];
  /** Applies a patch in the worker; throws when it does not apply. */
  applyPatch(worker: Worker, patch: string, what: string, signal: AbortSignal): Promise<void>;
  /**
   * Adds the hidden test files. Throws on failure (a broken task, not the agent's fault). Absent
   * (with `run`): the task has no hidden tests (a dataset row); its tests term is absent, not 0.
   */
  install?(worker: Worker, signal: AbortSignal): Promise<void>;
  /** Runs every hidden test once. */
  run?(worker: Worker, signal: AbortSignal): Promise<readonly HiddenTestVerdict[]>;
}

export interface ScoreOptions {
  readonly partialCredit: PartialCredit;
  readonly weights: Weights;
  /** Hidden-test runs; a test counts as passed only if it passed every time. */
  readonly repeat: number;
  readonly buildCmd?: string;
  readonly lintCmd?: string;
  readonly termTimeoutMs: number;
  readonly judge?: JudgeConfig;
  readonly taskPrompt: string;
}

/** The agent's diff did not apply, or the task's hidden tests did not install: scoring could not run. */
export class ScoringSetupError extends Error {
  override readonly name = "ScoringSetupError";
}

/** Merges repeated runs: passed only if passed every time; flaky if results differ. Pure. */
export function mergeRuns(runs: readonly (readonly HiddenTestVerdict[])[]): {
  results: TestResults;
  evalCmd?: { exitCode: number; timedOut: boolean; passed: boolean };
  flaky: string[];
} {
  const failToPass: Record<string, TestStatus> = {};
  const passToPass: Record<string, TestStatus> = {};
  const seen = new Map<string, Set<boolean>>();
  let evalCmd: { exitCode: number; timedOut: boolean; passed: boolean } | undefined;
  for (const run of runs) {
    for (const v of run) {
      const key = `${v.kind}:${v.id}`;
      if (!seen.has(key)) seen.set(key, new Set());
      seen.get(key)!.add(v.passed);
      if (v.kind === "eval_cmd") {
        if (!evalCmd || evalCmd.passed)
          evalCmd = { exitCode: v.exitCode, timedOut: v.timedOut, passed: v.passed };
        continue;
      }
      const bucket = v.kind === "fail_to_pass" ? failToPass : passToPass;
      const prev = bucket[v.id];
      bucket[v.id] = prev === "failed" || !v.passed ? "failed" : "passed";
    }
  }
  const flaky = [...seen.entries()].filter(([, s]) => s.size > 1).map(([k]) => k.slice(k.indexOf(":") + 1));
  return { results: { failToPass, passToPass }, ...(evalCmd ? { evalCmd } : {}), flaky: flaky.sort() };
}

function summarize(results: TestResults, evalCmd?: { exitCode: number; timedOut: boolean }): string {
  if (evalCmd) return `eval_cmd exited ${evalCmd.exitCode}${evalCmd.timedOut ? " (timed out)" : ""}`;
  const line = (name: string, r: Record<string, TestStatus>) =>
    `${name}: ${Object.values(r).filter((s) => s === "passed").length}/${Object.keys(r).length} passed` +
    (Object.entries(r).some(([, s]) => s !== "passed")
      ? ` (failing: ${Object.entries(r)
          .filter(([, s]) => s !== "passed")
          .map(([id]) => id)
          .join(", ")})`
      : "");
  return `${line("FAIL_TO_PASS", results.failToPass)}\n${line("PASS_TO_PASS", results.passToPass)}`;
}

async function commandTerm(
  worker: Worker,
  name: "build" | "lint",
  cmd: string | undefined,
  weight: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Term | undefined> {
  if (weight <= 0) return undefined;
  if (!cmd) return { name, weight, value: null, error: `no --${name}-cmd given` };
  const r = await worker.exec(cmd, { timeoutMs, signal });
  const tail = `${r.stdout}\n${r.stderr}`.trim().split("\n").slice(-5).join("\n");
  return {
    name,
    weight,
    value: r.exitCode === 0 && !r.timedOut ? 1 : 0,
    detail: `\`${cmd}\` exited ${r.exitCode}${r.timedOut ? " (timed out)" : ""}${r.exitCode !== 0 && tail ? `: ${tail}` : ""}`,
  };
}

/**
 * Scores `agentDiff` in `worker` (a fresh, exec-only fork of the task's snapshot). A task without
 * hidden tests (`ops.install`/`ops.run` absent) gets no tests term: combine() renormalizes the
 * reward over the build / lint / judge terms that are present.
 */
export async function scoreDiff(
  worker: Worker,
  agentDiff: string,
  ops: HiddenTestOps,
  o: ScoreOptions,
  signal: AbortSignal,
): Promise<Score> {
  const started = Date.now();
  const hidden = ops.install && ops.run ? { install: ops.install, run: ops.run } : undefined;
  const filtered = dropPaths(agentDiff, ops.testFiles);
  let gate: Gate | undefined;
  if (filtered.diff.trim() !== "") {
    try {
      await ops.applyPatch(worker, filtered.diff, "agent diff", signal);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      gate = { reason: "diff_apply_failed", detail: (err as Error).message };
    }
  }
  const base = {
    touchedTestFiles: filtered.droppedPaths,
    diffBytes: Buffer.byteLength(filtered.diff),
  };
  if (gate) {
    const terms: Term[] = hidden
      ? [{ name: "tests", weight: o.weights.tests, value: 0, detail: "not run: the diff did not apply" }]
      : [];
    return {
      reward: combine(terms, gate),
      gate,
      terms,
      flaky: [],
      ...base,
      durationMs: Date.now() - started,
    };
  }

  // build and lint judge the agent's change alone, before the hidden tests are added
  const terms: Term[] = [];
  const build = await commandTerm(worker, "build", o.buildCmd, o.weights.build, o.termTimeoutMs, signal);
  const lint = await commandTerm(worker, "lint", o.lintCmd, o.weights.lint, o.termTimeoutMs, signal);

  const runs: (readonly HiddenTestVerdict[])[] = [];
  if (hidden) {
    try {
      await hidden.install(worker, signal);
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw new ScoringSetupError(
        `the task's hidden tests could not be installed: ${(err as Error).message}`,
      );
    }
    for (let i = 0; i < Math.max(1, o.repeat); i++) runs.push(await hidden.run(worker, signal));
  }
  const merged = mergeRuns(runs);
  let tests: Score["tests"];
  if (!hidden) {
    // no hidden tests (a dataset row): no tests term at all
  } else if (merged.evalCmd) {
    terms.push({
      name: "tests",
      weight: o.weights.tests,
      value: evalCmdValue(merged.evalCmd.exitCode, merged.evalCmd.timedOut),
      detail: summarize(merged.results, merged.evalCmd),
    });
  } else {
    tests = testsTerm(merged.results, o.partialCredit);
    terms.push({
      name: "tests",
      weight: o.weights.tests,
      value: tests.value,
      detail: summarize(merged.results),
    });
  }
  if (build) terms.push(build);
  if (lint) terms.push(lint);

  let judge: Score["judge"];
  if (o.weights.judge > 0) {
    if (!o.judge) {
      terms.push({ name: "judge", weight: o.weights.judge, value: null, error: "no --judge endpoint given" });
    } else {
      const answer = await askJudge(
        o.judge,
        judgeMessages({
          taskPrompt: o.taskPrompt,
          diff: filtered.diff,
          testSummary: hidden
            ? summarize(merged.results, merged.evalCmd)
            : "no hidden tests (a dataset row): judge the change from the task and the diff",
        }),
        signal,
      );
      if (!answer.ok) {
        judge = { error: answer.error };
        terms.push({ name: "judge", weight: o.weights.judge, value: null, error: answer.error });
      } else {
        const p = parseJudgeScore(answer.text);
        judge = p.ok
          ? { raw: answer.text.slice(0, 4000), via: p.via }
          : { raw: answer.text.slice(0, 4000), error: p.error };
        terms.push(
          p.ok
            ? { name: "judge", weight: o.weights.judge, value: p.value, detail: `parsed ${p.via}: ${p.raw}` }
            : { name: "judge", weight: o.weights.judge, value: null, error: p.error },
        );
      }
    }
  }
  return {
    reward: combine(terms),
    terms,
    ...(tests ? { tests } : {}),
    ...(hidden ? { testResults: merged.results } : {}),
    ...(merged.evalCmd
      ? { evalCmd: { exitCode: merged.evalCmd.exitCode, timedOut: merged.evalCmd.timedOut } }
      : {}),
    flaky: merged.flaky,
    ...base,
    ...(judge ? { judge } : {}),
    durationMs: Date.now() - started,
  };
}
