import { randomInt } from "node:crypto";
import { match } from "ts-pattern";
import { DJANGO_LOG_LINES, djangoLogEvents } from "../tasks/runner-logs.js";
import {
  gradedOutcomes,
  type LogParser,
  logParserLines,
  pytestLogEvents,
} from "../tasks/swebench-log-parsers.js";
import type { Canary, ResultFormat } from "../tasks/task-spec.js";
import { parseSympyLine, SYMPY_LINES } from "../tasks/test-runners.js";
import type { DecoyPlan } from "./decoys/guard.js";

/**
 * Per-test results of a hidden-test suite, read from the runner's own result lines, and the canary
 * check that tells a real run from a tampered one. A test passed only if the runner reported it
 * passed and never failed; a test it did not report did not pass (an early exit, a killed runner).
 * Pure, apart from {@link newCanary}'s randomness.
 */

export type TestOutcome = "passed" | "failed";

/**
 * The lines the script keeps from a suite's output (grep -E), fixed per format: nothing the task
 * or the agent writes goes into the script.
 */
export function resultLinePattern(format: ResultFormat, parser?: LogParser): string {
  if (parser !== undefined && format === "pytest") return logParserLines(parser);
  return match(format)
    .with("libtest", () => "^test .* \\.\\.\\. (ok|FAILED|ignored)")
    .with("pytest", () => "^(PASSED|FAILED|ERROR|XPASS|XFAIL) ")
    .with("tap", () => "^ *(not )?ok [0-9]+ - ")
    .with("check-h", () => "^(ok|FAIL) [^ ]+$")
    .with("gotest", () => "^ *--- (PASS|FAIL|SKIP): ")
    .with("django", () => DJANGO_LOG_LINES)
    .with("sympy", () => SYMPY_LINES)
    .exhaustive();
}

/** One result line → test id and outcome, or undefined when the line is not a result (django: read whole-log). */
function parseLine(format: ResultFormat, line: string): { id: string; outcome: TestOutcome } | undefined {
  return match(format)
    .with("libtest", () => {
      const m = /^test (.+) \.\.\. (ok|FAILED|ignored)$/.exec(line);
      return m
        ? { id: m[1]!, outcome: m[2] === "ok" ? ("passed" as const) : ("failed" as const) }
        : undefined;
    })
    .with("pytest", () => {
      const m = /^(PASSED|FAILED|ERROR|XPASS|XFAIL) (\S+)/.exec(line);
      return m
        ? { id: m[2]!, outcome: m[1] === "PASSED" ? ("passed" as const) : ("failed" as const) }
        : undefined;
    })
    .with("tap", () => {
      const m = /^ *(not )?ok \d+ - (.*?)( # (SKIP|TODO)\b.*)?$/i.exec(line);
      if (!m) return undefined;
      const passed = m[1] === undefined && m[3] === undefined;
      return { id: m[2]!.replace(/\\#/g, "#"), outcome: passed ? ("passed" as const) : ("failed" as const) };
    })
    .with("check-h", () => {
      const m = /^(ok|FAIL) (\S+)$/.exec(line);
      return m
        ? { id: m[2]!, outcome: m[1] === "ok" ? ("passed" as const) : ("failed" as const) }
        : undefined;
    })
    .with("gotest", () => {
      const m = /^ *--- (PASS|FAIL|SKIP): (\S+) \(/.exec(line);
      return m
        ? { id: m[2]!, outcome: m[1] === "PASS" ? ("passed" as const) : ("failed" as const) }
        : undefined;
    })
    .with("django", () => undefined)
    .with("sympy", () => parseSympyLine(line))
    .exhaustive();
}

/**
 * Every reported test's outcome; a test reported both ways (e.g. a forged line beside the real one)
 * failed. A SWE-bench row's suite (`parser` given: tasks/swebench-log-parsers.ts) is read as the
 * harness reads that repository's log, and graded as it grades (XFAIL passes); Django's log is read
 * whole (a test whose output broke its line reports `ok` on a later line: tasks/runner-logs.ts). Pure.
 */
export function parseTestResults(
  format: ResultFormat,
  output: string,
  parser?: LogParser,
): Map<string, TestOutcome> {
  if (parser !== undefined && format === "pytest") return gradedOutcomes(pytestLogEvents(parser, output));
  if (format === "django") return gradedOutcomes(djangoLogEvents(output));
  const out = new Map<string, TestOutcome>();
  for (const raw of output.split("\n")) {
    const r = parseLine(format, raw.replace(/\r$/, ""));
    if (!r) continue;
    if (out.get(r.id) !== "failed") out.set(r.id, r.outcome);
  }
  return out;
}

/** This run's canary: random name and numbers, the text to put into the hidden test file, its id. */
export interface CanaryInstance {
  readonly file: string;
  readonly prepend: string;
  readonly append: string;
  readonly id: string;
}

/** Fills a task's canary template with `name` and two different integers. Pure. */
export function canaryOf(spec: Canary, name: string, a: number, b: number): CanaryInstance {
  if (a === b) throw new TypeError("the canary's two numbers must differ");
  if (!/^test_[0-9a-z]+$/.test(name))
    throw new TypeError(`canary name '${name}' must be test_<lower-case alphanumerics>`);
  const fill = (s: string) =>
    s.replaceAll("{name}", name).replaceAll("{a}", String(a)).replaceAll("{b}", String(b));
  return { file: spec.file, prepend: fill(spec.prepend), append: fill(spec.append), id: fill(spec.id) };
}

/** A fresh canary with a random name and numbers (per scoring run). */
export function newCanary(spec: Canary, hex: string): CanaryInstance {
  const a = randomInt(1, 1_000_000_000);
  const b = a + randomInt(1, 1_000_000);
  return canaryOf(spec, `test_${hex}`, a, b);
}

/**
 * Whether one suite run can be believed: its canary was reported failed and the command's exit
 * status says so (non-zero). The reason names what gave the tampering away. Pure.
 */
export function canaryVerdict(
  results: ReadonlyMap<string, TestOutcome>,
  canaryId: string,
  exitCode: number,
): { ok: true } | { ok: false; kind: "missing" | "passed" | "exit_zero"; reason: string } {
  const c = results.get(canaryId);
  if (c === undefined)
    return {
      ok: false,
      kind: "missing",
      reason: `the canary test '${canaryId}' did not report: the test run ended early or its reporting was replaced`,
    };
  if (c === "passed")
    return {
      ok: false,
      kind: "passed",
      reason: `the canary test '${canaryId}', which asserts two different numbers equal, passed: the test framework was tampered with`,
    };
  if (exitCode === 0)
    return {
      ok: false,
      kind: "exit_zero",
      reason: "the test command exited 0 although its canary test failed: the exit status was tampered with",
    };
  return { ok: true };
}

/**
 * Whether one suite run's decoys (scoring/decoys: twins of graded tests expecting another value)
 * tell an honest run. A decoy and its twin cannot both pass honestly (one literal of an equality,
 * containment or exception-class check differs), so both passing — or the twin passing while the
 * decoy did not report — means the run reports failures as passes. A decoy passing beside a
 * failed twin is {@link decoysPassedAlone}'s (a flagged 0, not a plain one). Pure.
 */
export function decoyVerdict(
  results: ReadonlyMap<string, TestOutcome>,
  plan: DecoyPlan,
): { ok: true } | { ok: false; reason: string } {
  for (const [decoy, of] of Object.entries(plan.decoys)) {
    const real = plan.runIds[of];
    if (real === undefined || results.get(real) !== "passed") continue;
    const d = results.get(decoy);
    // validate's probe of gold: a decoy passing beside its twin marks an inert site (decoyInertSites)
    if (d === "passed" && !plan.probe)
      return {
        ok: false,
        reason: `decoy test '${decoy}' (a twin of '${of}' that expects another value) passed beside it: the test run reports failures as passes`,
      };
    if (d === undefined)
      return {
        ok: false,
        reason: `decoy test '${decoy}' (a twin of '${of}') did not report while '${of}' passed: the test run's reporting was steered`,
      };
  }
  return { ok: true };
}

/**
 * `validate`'s probe of gold (plan.probe): per graded id, the sites (decoys/site-key.ts) whose
 * decoy passed beside the passing graded test — the changed assertion did not run for that case,
 * or the changed value held too. Gold is the reference patch: what it passes there, any solution
 * passes, so a decoy at such a site guards nothing and is never drawn there again
 * (`tests.run.decoyInert`). Empty for any other run. Pure.
 */
export function decoyInertSites(
  results: ReadonlyMap<string, TestOutcome>,
  plan: DecoyPlan,
): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (!plan.probe) return out;
  for (const [decoy, of] of Object.entries(plan.decoys)) {
    const site = plan.sites?.[decoy];
    const real = plan.runIds[of];
    if (site === undefined || real === undefined) continue;
    if (results.get(real) !== "passed" || results.get(decoy) !== "passed") continue;
    out[of] = [...new Set([...(out[of] ?? []), site])].sort();
  }
  return out;
}

/**
 * Decoys that passed while their twin (the graded test) did not: a guess at which copy is graded
 * that went wrong, or an honest wrong answer equal to the changed value. The reward is 0 either
 * way; the score says so with its own gate (`decoy_passed`) instead of a plain 0, so a guess is
 * never free. A complementary decoy (plan.complements: a boolean flipped) is not one of them: it
 * passes exactly when its twin fails honestly at that assertion, so its pass tells nothing (a
 * plain 0, or partial credit, as for any failed test). Pure.
 */
export function decoysPassedAlone(results: ReadonlyMap<string, TestOutcome>, plan: DecoyPlan): string[] {
  const complements = new Set(plan.complements ?? []);
  return Object.entries(plan.decoys)
    .filter(
      ([decoy, of]) =>
        !complements.has(decoy) &&
        results.get(decoy) === "passed" &&
        results.get(plan.runIds[of] ?? of) !== "passed",
    )
    .map(
      ([decoy, of]) =>
        `decoy test '${decoy}' (a twin of '${of}' that expects another value) passed while '${of}' did not: a guess at which copy is graded, or a wrong answer equal to the decoy's value`,
    );
}
