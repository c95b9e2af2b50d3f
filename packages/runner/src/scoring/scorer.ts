import { randomBytes } from "node:crypto";
import type { ProfileId } from "@flakegym/profiles";
import { FlakegymError } from "../errors.js";
import { harborRewardsOf } from "../tasks/harbor-rewards.js";
import type { LogParser } from "../tasks/swebench-log-parsers.js";
import { type Canary, type ResultFormat, type TestCommand, testPassed } from "../tasks/task-spec.js";
import { dropPaths } from "../text/diff.js";
import type { ExecResult, Worker } from "../workers/types.js";
import { applyReach, reachHits } from "./build-reach.js";
import type { DecoyPlan } from "./decoys/guard.js";
import type { ExternalSite } from "./externalize/canon.js";
import { externalRunVerdict, goldOutsideRunTests, nodeKeyOf, opaqueRunTests } from "./externalize/run.js";
import { UNBELIEVED } from "./externalize/verdict.js";
import { writeFileInWorker } from "./hidden-tests.js";
import type { JudgeConfig } from "./judge.js";
import { type JudgeStageOptions, judgeTerm } from "./judge-readings.js";
import { isTestDirName, protectDiff } from "./protect.js";
import type { BoundHidden } from "./read-only.js";
import {
  type CanaryInstance,
  canaryVerdict,
  decoyInertSites,
  decoysPassedAlone,
  decoyVerdict,
  newCanary,
  parseTestResults,
} from "./results.js";
import {
  combine,
  evalCmdValue,
  type Gate,
  type PartialCredit,
  type TamperPenalty,
  type Term,
  type TestResults,
  type TestStatus,
  testsTerm,
  type Weights,
} from "./reward.js";
import type { Score } from "./score.js";
import { killedTampering, scoredTestFiles, scoreGate, scoringPlanOf } from "./score-parts.js";
import { type Suspicion, type SuspiciousPenalty, screenDiff } from "./screen.js";
import {
  composeScoringScript,
  expectedSteps,
  hiddenStep,
  MAX_INLINE_SCRIPT_BYTES,
  type ParsedScoring,
  parseScoringOutput,
  resultsStep,
  type ScoringPlan,
  type StepResult,
  testStep,
  timedOutStep,
} from "./script.js";
import { observeScript, type ScriptVerdict, scriptVerdict } from "./script-verdict.js";
import type { ReachHit } from "./switched-off.js";
import { commandTestOutputs, suiteTestOutputs } from "./test-output.js";
import { readOrFailClosed, unjudgedVerdicts } from "./unjudged.js";

/**
 * Scores one trajectory in a FRESH worker (exec only) forked from the task's clean snapshot:
 * drop the agent's edits to hidden test files, then ONE script (scoring/script.ts) applies the
 * rest, runs the optional build / lint commands, adds the hidden tests and runs them (`repeat`
 * times, to catch flaky tests); the judge term is asked here.
 */

/** One hidden-test command's verdict in one run. */
export interface HiddenTestVerdict {
  readonly id: string;
  readonly kind: "fail_to_pass" | "pass_to_pass" | "eval_cmd";
  readonly passed: boolean;
  readonly exitCode: number;
  readonly timedOut: boolean;
  /** A Harbor verifier's reward.json, every key (eval_cmd only; the line its judge printed). */
  readonly rewards?: Readonly<Record<string, number>>;
}

/**
 * A task's hidden tests as data (from the task catalog, `hiddenTestsOf`): what to add to the
 * workspace and which commands grade it. Scoring composes them into one script.
 */
export interface HiddenTests {
  /** Workspace-relative paths of the hidden test files (the agent's edits to them are dropped). */
  readonly testFiles: readonly string[];
  /**
   * How the hidden tests get in: `git apply` of the task's tests patch, or its tests dir's files.
   * Absent: the task has no hidden tests (a dataset row); its tests term is absent, not 0.
   */
  readonly install?: NonNullable<ScoringPlan["install"]>;
  /** One command per test id (or the single eval command); empty for a suite. */
  readonly commands: readonly TestCommand[];
  /** Instead of `commands`: one command runs every test; per-test result lines and a canary judge it. */
  readonly suite?: {
    readonly command: string;
    readonly results: ResultFormat;
    /** A SWE-bench row's log reading (tasks/swebench-log-parsers.ts). */
    readonly logParser?: LogParser;
    readonly failToPass: readonly string[];
    readonly passToPass: readonly string[];
    readonly canary: Canary;
    /** Graded ids left to decoys: gold's value was opaque at a literal assertion (externalize/opaque.ts). */
    readonly opaque?: Readonly<Record<string, string>>;
    /** Decoy sites gold passed at validation, per graded id (decoys/site-key.ts): never drawn. */
    readonly decoyInert?: Readonly<Record<string, readonly string[]>>;
  };
  /** The task's protected paths beside the defaults (scoring/protect.ts); only with `install`. */
  readonly protected?: readonly string[];
  /** The task's profile: how its test command is demoted (scoring/demote.ts); absent: by its shape. */
  readonly profile?: ProfileId;
  /** Protected paths the task allows the agent to edit. */
  readonly allowEdits?: readonly string[];
  /** Deadline of one test command. */
  readonly timeoutMs: number;
}

export interface ScoreOptions extends JudgeStageOptions {
  readonly partialCredit: PartialCredit;
  readonly weights: Weights;
  /** Hidden-test runs; a test counts as passed only if it passed every time. */
  readonly repeat: number;
  readonly buildCmd?: string;
  readonly lintCmd?: string;
  /**
   * The profile whose default build `buildCmd` is: the script then lists the files the build
   * compiled, and a changed source file it did not compile costs the build and lint terms
   * (scoring/build-reach.ts). Code the diff switches off in-file costs them whatever the build.
   */
  readonly reach?: ProfileId;
  /**
   * The test command as written, the workspace first on every lookup (the scorer before
   * scoring/demote.ts: a baseline for the red team and the bench). Default false: demoted.
   */
  readonly workspaceFirst?: boolean;
  /** Build and lint terms as before they checked what they read (a baseline for the red team and the bench). */
  readonly reachBaseline?: boolean;
  readonly termTimeoutMs: number;
  readonly judge?: JudgeConfig;
  readonly taskPrompt: string;
  /** Most output bytes kept per step (default 64 KiB: its first and last halves). */
  readonly maxOutputBytes?: number;
  /** What an edit to a protected harness/build file costs (default revert). */
  readonly tamperPenalty?: TamperPenalty;
  /** What a hit of the static screen (scoring/screen.ts) costs (default none: recorded only). */
  readonly suspiciousPenalty?: SuspiciousPenalty;
  /**
   * The hidden test files the worker has bound read-only (`prepareReadOnlyHidden`, its canary in):
   * the script verifies them instead of installing the tests. Absent: the script installs them.
   */
  readonly bound?: BoundHidden;
}

/** The agent's diff did not apply, or the task's hidden tests did not install: scoring could not run. */
export class ScoringSetupError extends Error {
  override readonly name = "ScoringSetupError";
}

/** The eval command's run kept in score.json: the failing one when any failed. */
interface EvalCmdRun {
  exitCode: number;
  timedOut: boolean;
  passed: boolean;
  rewards?: Readonly<Record<string, number>>;
}

/** Merges repeated runs: passed only if passed every time; flaky if results differ. Pure. */
export function mergeRuns(runs: readonly (readonly HiddenTestVerdict[])[]): {
  results: TestResults;
  evalCmd?: EvalCmdRun;
  flaky: string[];
} {
  const failToPass: Record<string, TestStatus> = {};
  const passToPass: Record<string, TestStatus> = {};
  const seen = new Map<string, Set<boolean>>();
  let evalCmd: EvalCmdRun | undefined;
  for (const run of runs) {
    for (const v of run) {
      const key = `${v.kind}:${v.id}`;
      if (!seen.has(key)) seen.set(key, new Set());
      seen.get(key)!.add(v.passed);
      if (v.kind === "eval_cmd") {
        if (!evalCmd || evalCmd.passed)
          evalCmd = {
            exitCode: v.exitCode,
            timedOut: v.timedOut,
            passed: v.passed,
            ...(v.rewards ? { rewards: v.rewards } : {}),
          };
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

/** A build/lint term from its step's result. Pure. */
function commandTerm(
  name: "build" | "lint",
  cmd: string | undefined,
  weight: number,
  timeoutMs: number,
  step: StepResult | undefined,
): Term | undefined {
  if (weight <= 0) return undefined;
  if (!cmd) return { name, weight, value: null, error: `no --${name}-cmd given` };
  if (!step) return { name, weight, value: null, error: `\`${cmd}\` did not report a result` };
  const timedOut = timedOutStep(step, timeoutMs);
  const tail = step.output.trim().split("\n").slice(-5).join("\n");
  return {
    name,
    weight,
    value: step.exitCode === 0 && !timedOut ? 1 : 0,
    detail: `\`${cmd}\` exited ${step.exitCode}${timedOut ? " (timed out)" : ""}${step.exitCode !== 0 && tail ? `: ${tail}` : ""}`,
  };
}

/** A reach hit that cost a term, recorded beside the screen's hits. Pure. */
const reachSuspicion = (h: ReachHit): Suspicion => ({
  file: h.file,
  line: h.line,
  class: "build-exclusion",
  reason: h.why,
  text: h.text,
});

/**
 * The build and lint terms of a finished script: each command's exit, then only for the code it
 * read (scoring/build-reach.ts; `counted`: the hits that cost a term). Pure.
 */
function commandTerms(o: ScoreOptions, parsed: ParsedScoring, plan: ScoringPlan, diff: string) {
  const reach = readOrFailClosed(
    parsed.agentRan,
    "what the build compiled",
    () =>
      o.reachBaseline ? [] : reachHits(diff, plan.build ? o.reach : undefined, parsed.steps.get("reach")),
    // a build hit costs both terms: each zeroed with the reason
    (why): ReachHit[] => [{ term: "build", file: "(build)", line: 0, why, text: "" }],
  );
  return applyReach(
    {
      build: commandTerm("build", o.buildCmd, o.weights.build, o.termTimeoutMs, parsed.steps.get("build")),
      lint: commandTerm("lint", o.lintCmd, o.weights.lint, o.termTimeoutMs, parsed.steps.get("lint")),
    },
    reach,
  );
}

/** Keeps the start and end of a long text. */
const clip = (s: string, max = 2_000) =>
  s.length <= max ? s : `${s.slice(0, max / 2)}\n[…]\n${s.slice(-max / 2)}`;

/**
 * Runs the composed script with ONE exec (every backend, Nomad included: nothing relies on state
 * between execs). Too long for one command line: on backends whose execs share a workspace the
 * payloads are written first; on stateless ones (Nomad) that is an error naming the size.
 */
export async function runScript(
  worker: Worker,
  plan: ScoringPlan,
  signal: AbortSignal,
): Promise<{ parsed: ParsedScoring; exec: ExecResult }> {
  const salt = randomBytes(12).toString("hex");
  let composed = composeScoringScript(plan, { salt });
  if (Buffer.byteLength(composed.script) > MAX_INLINE_SCRIPT_BYTES) {
    if (worker.statelessExec) {
      throw new FlakegymError(
        "E_SCORE_TOO_LARGE",
        `the scoring script for worker ${worker.id} is ${Buffer.byteLength(composed.script)} bytes (agent diff ${Buffer.byteLength(plan.agentDiff)} bytes); one exec on the ${worker.backend} backend takes at most ${MAX_INLINE_SCRIPT_BYTES}`,
        {
          hint: "score this trajectory on the local or podman backend, or shrink the task's hidden test files",
        },
      );
    }
    composed = composeScoringScript(plan, { salt, stagedDir: `.flakegym-score-${salt}` });
    for (const f of composed.staged) await writeFileInWorker(worker, f.path, f.content, signal);
  }
  // PID 1 of its sandbox where the backend can: no init holds the channel (scoring/script-seal.ts)
  const exec = await worker.exec(composed.script, { timeoutMs: composed.timeoutMs, signal, asInit: true });
  signal.throwIfAborted();
  return { parsed: parseScoringOutput(exec.stdout), exec };
}

/**
 * Test directories holding hidden test files (their existing files are protected): only
 * directories named like one (`test`, `tests`, `__tests__`, `spec`, `testdata`, … somewhere in the
 * path), so a hidden test living next to the code (Go's `_test.go`, a Rust `src/` file) does not
 * freeze the code under test. Pure.
 */
export function testDirsOf(testFiles: readonly string[]): string[] {
  const looksLikeTests = (dir: string) => dir.split("/").some(isTestDirName);
  return [...new Set(testFiles.map((f) => (f.includes("/") ? f.slice(0, f.lastIndexOf("/")) : "")))]
    .filter((d) => d !== "" && looksLikeTests(d))
    .sort();
}

/** The hidden tests' verdicts per run, and what showed that the run was steered. */
export interface RunVerdicts {
  readonly runs: HiddenTestVerdict[][];
  /** Why the runs cannot be believed (empty: nothing seen). */
  readonly tampering: string[];
  /** Hidden test files the code under test changed while the tests ran. */
  readonly rewritten: string[];
  /** Decoys that passed while their graded twin did not (a flagged 0: gate `decoy_passed`). */
  readonly decoyPassed?: string[];
  /** Graded ids that emitted an opaque value at a literal assertion (externalize/opaque.ts). */
  readonly opaque?: Record<string, string>;
  /** `validate`'s probe of gold: per graded id, the sites its decoys passed at (results.ts decoyInertSites). */
  readonly decoyInert?: Record<string, string[]>;
}

/** Hidden test files a test command changed, from its `hidden.<run>.<index>` step. Pure. */
const rewrittenBy = (parsed: ParsedScoring, run: number, index: number): string[] =>
  (parsed.steps.get(hiddenStep(run, index))?.output ?? "").split("\n").filter((l) => l !== "");

/** Verdicts of per-id (and eval_cmd) commands over `repeat` runs. Pure. */
export function commandVerdicts(
  parsed: ParsedScoring,
  commands: readonly TestCommand[],
  repeat: number,
  timeoutMs: number,
): RunVerdicts {
  const tampering: string[] = [];
  const rewritten = new Set<string>();
  const runs: HiddenTestVerdict[][] = [];
  for (let r = 0; r < repeat; r++) {
    runs.push(
      commands.map((cmd, i) => {
        const step = parsed.steps.get(testStep(r, i));
        const changed = rewrittenBy(parsed, r, i);
        for (const f of changed) rewritten.add(f);
        if (!step) return { id: cmd.id, kind: cmd.kind, passed: false, exitCode: 137, timedOut: true };
        const timedOut = timedOutStep(step, timeoutMs);
        const rewards = cmd.kind === "eval_cmd" ? harborRewardsOf(step.output) : undefined;
        return {
          id: cmd.id,
          kind: cmd.kind,
          passed: changed.length === 0 && !timedOut && testPassed(cmd, step.exitCode, step.output),
          exitCode: step.exitCode,
          timedOut,
          ...(rewards ? { rewards } : {}),
        };
      }),
    );
  }
  if (rewritten.size)
    tampering.push(`hidden test files changed while the tests ran: ${[...rewritten].sort().join(", ")}`);
  return { runs, tampering, rewritten: [...rewritten].sort() };
}

/** Verdicts of a suite over `repeat` runs: per-test result lines, the canary, the exit status. Pure. */
export function suiteVerdicts(
  parsed: ParsedScoring,
  suite: NonNullable<HiddenTests["suite"]>,
  canaryId: string,
  repeat: number,
  timeoutMs: number,
  decoys: DecoyPlan = { runIds: {}, decoys: {} },
  external: readonly ExternalSite[] = [],
): RunVerdicts {
  const tampering: string[] = [];
  const rewritten = new Set<string>();
  const decoyPassed = new Set<string>();
  const opaque: Record<string, string> = {};
  const inert: Record<string, string[]> = {};
  const runs: HiddenTestVerdict[][] = [];
  const ids = [
    ...suite.failToPass.map((id) => ({ id, kind: "fail_to_pass" as const })),
    ...suite.passToPass.map((id) => ({ id, kind: "pass_to_pass" as const })),
  ];
  for (let r = 0; r < repeat; r++) {
    const step = parsed.steps.get(testStep(r, 0));
    const lines = parsed.steps.get(resultsStep(r, 0));
    const changed = rewrittenBy(parsed, r, 0);
    for (const f of changed) rewritten.add(f);
    const timedOut = step ? timedOutStep(step, timeoutMs) : true;
    const results = parseTestResults(suite.results, lines?.output ?? "", suite.logParser);
    const outcome = (id: string) => results.get(decoys.runIds[id] ?? id);
    let believed = step !== undefined && lines !== undefined && changed.length === 0;
    if (step && lines?.cut) {
      believed = false;
      tampering.push(`run ${r + 1}: its result lines exceeded the output limit (${lines.outputBytes} bytes)`);
    } else if (step && lines && !timedOut) {
      const c = canaryVerdict(results, canaryId, step.exitCode);
      // a suite that reported nothing at all (e.g. the hidden tests do not compile) simply failed
      const silent = ids.every(({ id }) => outcome(id) === undefined);
      if (!c.ok && !(c.kind === "missing" && silent)) {
        believed = false;
        tampering.push(`run ${r + 1}: ${c.reason}`);
      }
      const d = decoyVerdict(results, decoys);
      if (!d.ok) {
        believed = false;
        tampering.push(`run ${r + 1}: ${d.reason}`);
      }
      for (const why of decoysPassedAlone(results, decoys)) decoyPassed.add(`run ${r + 1}: ${why}`);
      for (const [id, sites] of Object.entries(decoyInertSites(results, decoys)))
        inert[id] = [...new Set([...(inert[id] ?? []), ...sites])].sort();
    }
    // externalized assertions: the runner's pass is evidence, the host's comparison the verdict
    const outside = externalRunVerdict(
      parsed,
      r,
      ids.map((i) => decoys.runIds[i.id] ?? i.id),
      external,
      nodeKeyOf(suite.logParser),
    );
    // a stream no emitter writes (a line it cannot parse, nested past any rendering, cut for
    // length) was written into from inside: every externalized test failed, and the run is flagged
    const unbelieved = [...outside.values()].find((why) => why.startsWith(UNBELIEVED));
    if (unbelieved) tampering.push(`run ${r + 1}: ${unbelieved}`);
    if (believed)
      Object.assign(
        opaque,
        opaqueRunTests(
          parsed,
          r,
          ids.map((i) => i.id),
          external,
          nodeKeyOf(suite.logParser),
        ),
      );
    // gold's probe at validate: what the host cannot compare on gold's own run is recorded too
    if (believed && !timedOut && decoys.probe) {
      const passed = new Map(
        ids.filter(({ id }) => outcome(id) === "passed").map(({ id }) => [id, decoys.runIds[id] ?? id]),
      );
      Object.assign(opaque, goldOutsideRunTests(parsed, r, passed, external, nodeKeyOf(suite.logParser)));
    }
    runs.push(
      ids.map(({ id, kind }) => ({
        id,
        kind,
        passed: believed && !timedOut && outcome(id) === "passed" && !outside.has(decoys.runIds[id] ?? id),
        exitCode: step?.exitCode ?? 137,
        timedOut,
      })),
    );
  }
  if (rewritten.size)
    tampering.push(`hidden test files changed while the tests ran: ${[...rewritten].sort().join(", ")}`);
  return {
    runs,
    tampering: [...new Set(tampering)],
    rewritten: [...rewritten].sort(),
    ...(decoyPassed.size ? { decoyPassed: [...decoyPassed] } : {}),
    ...(Object.keys(opaque).length ? { opaque } : {}),
    ...(Object.keys(inert).length ? { decoyInert: inert } : {}),
  };
}

/** The score when the agent's diff did not apply: a gate and a 0 tests term (if the task has tests). */
function applyFailedScore(
  workerId: string,
  output: string,
  hasTests: boolean,
  testsWeight: number,
  base: Pick<Score, "touchedTestFiles" | "tampered" | "diffBytes">,
  started: number,
): Score {
  const gate: Gate = {
    reason: "diff_apply_failed",
    detail: `applying agent diff in worker ${workerId} failed: ${output.trim()}`,
  };
  const terms: Term[] = hasTests
    ? [{ name: "tests", weight: testsWeight, value: 0, detail: "not run: the diff did not apply" }]
    : [];
  return { reward: combine(terms, gate), gate, terms, flaky: [], ...base, durationMs: Date.now() - started };
}

/** The script ended early and not by the agent's code: an infra failure, retried. */
function incompleteScript(workerId: string, exec: ExecResult, what: string): FlakegymError {
  return new FlakegymError(
    "E_SCORE_SCRIPT",
    `the scoring script in worker ${workerId} ${what} (exit ${exec.exitCode}${exec.timedOut ? ", timed out" : ""}): ${clip((exec.stderr || exec.stdout).trim())}`,
    { hint: "the worker died or was killed mid-scoring; the trajectory is retried as an infra failure" },
  );
}

/** How the scoring script ended, before its verdicts are read (scoring/script-verdict.ts). */
export type ScriptEnd = ScriptVerdict;

/**
 * How the script ended: stopped at the diff or at the hidden tests' install, lost by the machinery
 * (before any of the agent's code ran, killed from outside, or aborted by us), or ran — to its end,
 * or ended, held up or garbled by the code under test (`killed`, `failClosed`: reward 0 with the
 * reason). `expected`: the steps the script reports when it runs to its end. Pure.
 */
export function scriptEnd(
  parsed: ParsedScoring,
  exec: ExecResult,
  aborted: boolean,
  expected: readonly string[],
): ScriptEnd {
  const { phase, observation } = observeScript(parsed, exec, aborted, expected);
  return scriptVerdict(phase, observation);
}

/**
 * What a script that ran says about its own run (why it scores 0: the agent's code ended it or
 * the channel cannot be believed); throws when it did not run (the hidden tests did not install
 * before any agent code: a setup error; the script was lost: an infra failure, retried).
 */
export function endedBy(
  workerId: string,
  exec: ExecResult,
  end: Exclude<ScriptEnd, { kind: "apply_failed" }>,
): string[] {
  if (end.kind === "setup_failed")
    throw new ScoringSetupError(`the task's hidden tests could not be installed: ${end.output.trim()}`);
  if (end.kind === "infra") throw incompleteScript(workerId, exec, end.what);
  return [...killedTampering(end.killed, exec.exitCode), ...(end.failClosed ? [end.failClosed] : [])];
}

/** The tests term of merged runs (the eval command's exit, or the per-test results). */
function testsTermOf(
  merged: ReturnType<typeof mergeRuns>,
  o: ScoreOptions,
): { term: Term; tests?: Score["tests"] } {
  if (merged.evalCmd)
    return {
      term: {
        name: "tests",
        weight: o.weights.tests,
        value: evalCmdValue(merged.evalCmd.exitCode, merged.evalCmd.timedOut),
        detail: summarize(merged.results, merged.evalCmd),
      },
    };
  const tests = testsTerm(merged.results, o.partialCredit);
  return {
    term: { name: "tests", weight: o.weights.tests, value: tests.value, detail: summarize(merged.results) },
    tests,
  };
}

/**
 * The hidden tests' verdicts and outputs of a finished script (none for a task without tests);
 * what the host cannot read after the agent's code ran fails every test (scoring/unjudged.ts).
 */
export function hiddenVerdicts(
  parsed: ParsedScoring,
  hidden: HiddenTests,
  o: ScoreOptions,
  canary: CanaryInstance | undefined,
  repeat: number,
): { verdicts: RunVerdicts; testOutput: Score["testOutput"] } {
  return readOrFailClosed(
    parsed.agentRan,
    "the hidden tests' results and emissions",
    () => readHiddenVerdicts(parsed, hidden, o, canary, repeat),
    (why) => ({ verdicts: unjudgedVerdicts(hidden, repeat, why), testOutput: {} }),
  );
}

function readHiddenVerdicts(
  parsed: ParsedScoring,
  hidden: HiddenTests,
  o: ScoreOptions,
  canary: CanaryInstance | undefined,
  repeat: number,
): { verdicts: RunVerdicts; testOutput: Score["testOutput"] } {
  if (hidden.install === undefined)
    return { verdicts: { runs: [], tampering: [], rewritten: [] }, testOutput: {} };
  // a test without a result ran into the exec's own deadline (no `timeout` in the image) or was killed
  if (hidden.suite && canary) {
    const verdicts = suiteVerdicts(
      parsed,
      hidden.suite,
      canary.id,
      repeat,
      hidden.timeoutMs,
      o.bound?.decoys,
      o.bound?.external,
    );
    return { verdicts, testOutput: suiteTestOutputs(parsed, verdicts.runs, o.bound?.decoys) };
  }
  const verdicts = commandVerdicts(parsed, hidden.commands, repeat, hidden.timeoutMs);
  return { verdicts, testOutput: commandTestOutputs(parsed, verdicts.runs) };
}

/**
 * The agent's diff without its edits to the hidden test files, then without those to protected
 * files. A row's build and lint terms are judged under the snapshot's build files too: a Makefile,
 * Cargo.toml or go.mod the agent wrote would otherwise decide whether its change "builds".
 */
function guardDiff(agentDiff: string, hidden: HiddenTests, testFiles: readonly string[]) {
  const filtered = dropPaths(agentDiff, testFiles);
  const guarded = protectDiff(filtered.diff, {
    protected: hidden.protected ?? [],
    allowEdits: hidden.allowEdits ?? [],
    testDirs: testDirsOf(testFiles),
    keepNewTests: hidden.install === undefined,
  });
  return { filtered, guarded };
}

/** The judge's term, told the tests' summary and value when the task has tests. */
function judgeOf(
  o: ScoreOptions,
  diff: string,
  hasTests: boolean,
  merged: ReturnType<typeof mergeRuns>,
  terms: readonly Term[],
  signal: AbortSignal,
) {
  return judgeTerm(
    o,
    diff,
    hasTests ? summarize(merged.results, merged.evalCmd) : undefined,
    terms.find((t) => t.name === "tests")?.value ?? undefined,
    signal,
  );
}

/**
 * Scores `agentDiff` in `worker` (a fresh, exec-only fork of the task's snapshot) with one script.
 * Edits to hidden test files and to protected harness/build files are dropped first and recorded.
 * A task without hidden tests (`hidden.install` absent, a dataset row) gets no tests term:
 * combine() renormalizes the reward over the build / lint / judge terms, which run under the
 * snapshot's build files all the same (the agent's new test files stay in: the build judges them).
 */
export async function scoreDiff(
  worker: Worker,
  agentDiff: string,
  hidden: HiddenTests,
  o: ScoreOptions,
  signal: AbortSignal,
): Promise<Score> {
  const started = Date.now();
  const testFiles = scoredTestFiles(hidden, o);
  const hasTests = hidden.install !== undefined;
  const { filtered, guarded } = guardDiff(agentDiff, hidden, testFiles);
  const canary: CanaryInstance | undefined = o.bound
    ? o.bound.canary
    : hidden.suite
      ? newCanary(hidden.suite.canary, randomBytes(6).toString("hex"))
      : undefined;
  const plan = scoringPlanOf(hidden, o, guarded.diff, testFiles, canary);
  const { parsed, exec } = await runScript(worker, plan, signal);
  const base = {
    touchedTestFiles: filtered.droppedPaths,
    tampered: guarded.tampered,
    diffBytes: Buffer.byteLength(guarded.diff),
  };
  const end = scriptEnd(parsed, exec, signal.aborted, expectedSteps(plan));
  if (end.kind === "apply_failed")
    return applyFailedScore(worker.id, end.output, hasTests, o.weights.tests, base, started);
  const ended = endedBy(worker.id, exec, end);

  // build and lint judge the agent's change alone, before the hidden tests are added
  const { build: buildTerm, lint: lintTerm, counted } = commandTerms(o, parsed, plan, guarded.diff);
  const { verdicts, testOutput = {} } = hiddenVerdicts(parsed, hidden, o, canary, plan.repeat);
  const tampering = [...ended, ...verdicts.tampering];
  const merged = mergeRuns(verdicts.runs);
  // no hidden tests (a dataset row): no tests term at all
  const testsPart = hasTests ? testsTermOf(merged, o) : undefined;
  const tests = testsPart?.tests;
  const terms: Term[] = [
    ...(testsPart ? [testsPart.term] : []),
    ...(buildTerm ? [buildTerm] : []),
    ...(lintTerm ? [lintTerm] : []),
  ];

  const judged =
    o.weights.judge > 0 ? await judgeOf(o, guarded.diff, hasTests, merged, terms, signal) : undefined;
  if (judged) terms.push(judged.term);
  const judge = judged?.judge;
  const suspicious = [...screenDiff(guarded.diff), ...counted.map(reachSuspicion)];
  const gate = scoreGate(tampering, guarded.tampered, suspicious, o, verdicts.decoyPassed);
  return {
    reward: combine(terms, gate),
    ...(gate ? { gate } : {}),
    terms,
    ...(tests ? { tests } : {}),
    ...(hasTests ? { testResults: merged.results } : {}),
    ...(Object.keys(testOutput).length ? { testOutput } : {}),
    ...(merged.evalCmd
      ? {
          evalCmd: {
            exitCode: merged.evalCmd.exitCode,
            timedOut: merged.evalCmd.timedOut,
            ...(merged.evalCmd.rewards ? { rewards: { ...merged.evalCmd.rewards } } : {}),
          },
        }
      : {}),
    flaky: merged.flaky,
    ...base,
    tampered: [...new Set([...guarded.tampered, ...verdicts.rewritten])].sort(),
    ...(judge ? { judge } : {}),
    ...(o.bound?.guard
      ? {
          decoys: {
            ...o.bound.guard,
            ...(verdicts.opaque ? { opaque: verdicts.opaque } : {}),
            ...(verdicts.decoyInert ? { inert: verdicts.decoyInert } : {}),
          },
        }
      : {}),
    ...(guarded.ignored.length ? { ignoredTests: guarded.ignored } : {}),
    ...(suspicious.length ? { suspicious } : {}),
    channel: parsed.channel,
    durationMs: Date.now() - started,
  };
}
