import { describe, expect, it } from "vitest";
import { tamperGate } from "../../src/scoring/reward.js";
import { commandVerdicts, mergeRuns, suiteVerdicts, testDirsOf } from "../../src/scoring/scorer.js";
import type { StepResult } from "../../src/scoring/script.js";
import { parsedScoring } from "../helpers/parsed-scoring.js";

const v = (id: string, kind: "fail_to_pass" | "pass_to_pass" | "eval_cmd", passed: boolean) => ({
  id,
  kind,
  passed,
  exitCode: passed ? 0 : 1,
  timedOut: false,
});

describe("mergeRuns", () => {
  it("a test passes only if it passed in every repeat; differing results are flaky", () => {
    const m = mergeRuns([
      [v("a", "fail_to_pass", true), v("b", "pass_to_pass", true), v("c", "pass_to_pass", false)],
      [v("a", "fail_to_pass", false), v("b", "pass_to_pass", true), v("c", "pass_to_pass", false)],
    ]);
    expect(m.results).toEqual({ failToPass: { a: "failed" }, passToPass: { b: "passed", c: "failed" } });
    expect(m.flaky).toEqual(["a"]);
  });

  it("keeps the first failing eval_cmd run", () => {
    const m = mergeRuns([
      [v("eval_cmd", "eval_cmd", true)],
      [{ ...v("eval_cmd", "eval_cmd", false), exitCode: 3 }],
    ]);
    expect(m.evalCmd).toEqual({ exitCode: 3, timedOut: false, passed: false });
    expect(m.flaky).toEqual(["eval_cmd"]);
  });
});

const step = (output: string, exitCode = 0, more: Partial<StepResult> = {}): StepResult => ({
  exitCode,
  output,
  outputBytes: Buffer.byteLength(output),
  seconds: 1,
  ...more,
});
const parsed = parsedScoring;
const suite = {
  command: "make -s check",
  results: "check-h" as const,
  failToPass: ["f1", "f2"],
  passToPass: ["p1"],
  canary: { file: "tests/t.c", prepend: "", append: "x", id: "{name}" },
};
const passed = (v: ReturnType<typeof suiteVerdicts>) =>
  v.runs.map((r) => r.filter((t) => t.passed).map((t) => t.id));

describe("suiteVerdicts", () => {
  it("an honest run: each expected test as reported, the canary failed, the command exited non-zero", () => {
    const v = suiteVerdicts(
      parsed({
        "test.0.0": step("", 1),
        "results.0.0": step("ok f1\nFAIL f2\nok p1\nFAIL test_c\n"),
        "hidden.0.0": step(""),
      }),
      suite,
      "test_c",
      1,
      60_000,
    );
    expect(passed(v)).toEqual([["f1", "p1"]]);
    expect(v.tampering).toEqual([]);
  });

  it("every way a run gives itself away fails all its tests and says why", () => {
    const cases: [string, Record<string, StepResult>, RegExp][] = [
      [
        "canary passed",
        { "test.0.0": step("", 1), "results.0.0": step("ok f1\nok f2\nok p1\nok test_c\n") },
        /canary .* passed/,
      ],
      [
        "early exit 0",
        { "test.0.0": step("", 0), "results.0.0": step("ok f1\nok f2\nok p1\n") },
        /did not report/,
      ],
      [
        "exit status forged",
        { "test.0.0": step("", 0), "results.0.0": step("ok f1\nok f2\nok p1\nFAIL test_c\n") },
        /exited 0/,
      ],
      [
        "results flooded",
        {
          "test.0.0": step("", 1),
          "results.0.0": step("ok f1\nok f2\nok p1\nFAIL test_c\n", 0, { cut: true, outputBytes: 9e6 }),
        },
        /exceeded the output limit/,
      ],
      [
        "hidden file rewritten",
        {
          "test.0.0": step("", 1),
          "results.0.0": step("ok f1\nok f2\nok p1\nFAIL test_c\n"),
          "hidden.0.0": step("tests/t.c\n"),
        },
        /changed while the tests ran: tests\/t.c/,
      ],
    ];
    for (const [what, steps, why] of cases) {
      const v = suiteVerdicts(parsed(steps), suite, "test_c", 1, 60_000);
      expect({ what, passed: passed(v) }).toEqual({ what, passed: [[]] });
      expect({ what, tampering: v.tampering.join("; ") }).toEqual({
        what,
        tampering: expect.stringMatching(why),
      });
    }
  });

  it("a suite that reported nothing (it did not build) simply failed: no tampering is claimed", () => {
    const v = suiteVerdicts(
      parsed({ "test.0.0": step("error: cannot find type `Orientation`", 101), "results.0.0": step("") }),
      suite,
      "test_c",
      1,
      60_000,
    );
    expect(passed(v)).toEqual([[]]);
    expect(v.tampering).toEqual([]);
  });

  it("a decoy that passed beside its failed twin is recorded for a flagged 0; an honest wrong answer fails plainly", () => {
    const decoys = { runIds: { f1: "t_aaaa" }, decoys: { t_bbbb: "f1" } };
    const run = (lines: string) =>
      suiteVerdicts(
        parsed({ "test.0.0": step("", 1), "results.0.0": step(lines), "hidden.0.0": step("") }),
        suite,
        "test_c",
        1,
        60_000,
        decoys,
      );
    const guessed = run("FAIL t_aaaa\nok t_bbbb\nok f2\nok p1\nFAIL test_c\n");
    expect(passed(guessed)).toEqual([["f2", "p1"]]);
    expect(guessed.decoyPassed).toEqual([expect.stringMatching(/^run 1: decoy test 't_bbbb'/)]);
    expect(run("FAIL t_aaaa\nFAIL t_bbbb\nok f2\nok p1\nFAIL test_c\n").decoyPassed).toBeUndefined();
  });
});

describe("suiteVerdicts with cases a rewritten file ids afresh (a parametrized expected side)", () => {
  const py = {
    command: "python3 -m pytest",
    results: "pytest" as const,
    failToPass: ["t.py::test_n[a-A]"],
    passToPass: [],
    canary: { file: "t.py", prepend: "", append: "x", id: "{name}" },
  };
  const site = {
    site: "0123456789abcdef",
    test: "t.py::test_n",
    kind: "eq" as const,
    expected: null,
    opts: {},
    count: "one" as const,
    pair: false,
    byCase: { p1: { t: "str" as const, v: "A" } },
  };
  const run = (emitted: string) =>
    suiteVerdicts(
      parsed({
        "test.0.0": step("", 1),
        "results.0.0": step("PASSED t.py::test_n[p1]\nFAILED t.py::test_c\n"),
        "hidden.0.0": step(""),
        "emitted.0.0": step(emitted),
      }),
      py,
      "t.py::test_c",
      1,
      60_000,
      { runIds: { "t.py::test_n[a-A]": "t.py::test_n[p1]" }, decoys: {} },
      [site],
    );
  it("the graded id is judged under its id in the run, against the case's value kept on the host", () => {
    const line = (v: string) =>
      `${JSON.stringify({ s: site.site, n: "t.py::test_n[p1]", v: { t: "str", v } })}\n`;
    expect(passed(run(line("A")))).toEqual([["t.py::test_n[a-A]"]]);
    expect(passed(run(line("B")))).toEqual([[]]);
    expect(passed(run(""))).toEqual([[]]);
  });
});

describe("commandVerdicts", () => {
  it("a per-id command that rewrote a hidden test file does not pass", () => {
    const cmds = [
      { id: "a", kind: "fail_to_pass" as const, command: "t a" },
      { id: "b", kind: "fail_to_pass" as const, command: "t b" },
    ];
    const v = commandVerdicts(
      parsed({ "test.0.0": step("ok"), "hidden.0.0": step("tests/x.py\n"), "test.0.1": step("ok") }),
      cmds,
      1,
      60_000,
    );
    expect(v.runs[0]!.map((t) => [t.id, t.passed])).toEqual([
      ["a", false],
      ["b", true],
    ]);
    expect(v.rewritten).toEqual(["tests/x.py"]);
  });
});

describe("tamper penalty and test dirs", () => {
  it("revert records only; zero gates the reward to 0 naming the files", () => {
    expect(tamperGate([], "zero")).toBeUndefined();
    expect(tamperGate(["Makefile"], "revert")).toBeUndefined();
    expect(tamperGate(["Makefile", "conftest.py"], "zero")).toEqual({
      reason: "tampered",
      detail: "the diff edits protected harness/build files (Makefile, conftest.py); --tamper-penalty zero",
    });
  });

  it("test dirs are the hidden test files' directories that are named like test directories", () => {
    expect(
      testDirsOf(["tests/a.rs", "tests/b.rs", "pkg/test/x.mjs", "top.py", "src/gauge.rs", "pkg/a_test.go"]),
    ).toEqual(["pkg/test", "tests"]);
  });
});
