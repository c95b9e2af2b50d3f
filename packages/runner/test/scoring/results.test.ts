import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { canaryOf, canaryVerdict, parseTestResults, resultLinePattern } from "../../src/scoring/results.js";
import type { ResultFormat } from "../../src/tasks/task-spec.js";

// Result lines as the real runners print them (cargo test 1.95, pytest -rA, node 20 --test
// --test-reporter=tap, check.h), with noise around them.
const SAMPLES: Record<ResultFormat, string> = {
  libtest: [
    "   Compiling tinygauge v0.3.0",
    "running 2 tests",
    "test gauge::tests::half_filled ... ok",
    "test vertical_full_and_empty ... FAILED",
    "test slow ... ignored",
    "test result: FAILED. 1 passed; 1 failed",
  ].join("\n"),
  pytest: [
    "tests/test_a.py .F",
    "PASSED tests/test_a.py::test_one",
    "FAILED tests/test_a.py::test_two - assert 1 == 2",
    "ERROR tests/test_b.py::test_three",
  ].join("\n"),
  tap: [
    "TAP version 13",
    "# Subtest: caret zero",
    "ok 1 - caret zero",
    "    not ok 2 - nested one",
    "ok 3 - skipped one # SKIP",
    "# ok 4 - a diagnostic line is not a result",
  ].join("\n"),
  "check-h": ["ok append_and_format", "FAIL trim", "2 passed, 1 failed", "ok  spaced"].join("\n"),
  gotest: [
    "=== RUN   TestOne",
    "--- PASS: TestOne (0.00s)",
    "    a_test.go:6: no",
    "--- FAIL: TestTwo (0.00s)",
    "--- FAIL: TestSub (0.00s)",
    "    --- PASS: TestSub/inner_case (0.00s)",
    "    --- FAIL: TestSub/bad (0.00s)",
    "--- SKIP: TestSkip (0.00s)",
    "FAIL\texample.com/s\t0.003s",
  ].join("\n"),
  // Django's tests/runtests.py --verbosity 2 (unittest), Python 3.11 and older id shapes
  django: [
    "Testing against Django installed in '/repo/django' with up to 1 processes",
    "test_ascii (auth_tests.test_validators.UsernameValidatorsTests) ... ok",
    "test_unicode (auth_tests.test_validators.UsernameValidatorsTests.test_unicode) ... FAIL",
    "test_docstring (auth_tests.test_validators.UsernameValidatorsTests)",
    "A docstring's first line stands for the test. ... ok",
    "test_skip (auth_tests.test_validators.X) ... skipped 'no db'",
    "ERROR: test_boom (auth_tests.test_validators.X)",
    "Ran 4 tests in 0.004s",
  ].join("\n"),
  // SymPy's bin/test -C --verbose
  sympy: [
    "============================= test process starts ==============================",
    "sympy/core/tests/test_basic.py[3] ",
    "test_one ok",
    "test_two F",
    "test_three E",
    "  test_four ok",
    "test_five F                                                             [FAIL]",
    "",
    "______________________________ sympy/core/tests/test_basic.py:test_two _______",
  ].join("\n"),
};

describe("parseTestResults", () => {
  it("reads each format's own result lines and nothing else", () => {
    expect(Object.fromEntries(parseTestResults("libtest", SAMPLES.libtest))).toEqual({
      "gauge::tests::half_filled": "passed",
      vertical_full_and_empty: "failed",
      slow: "failed",
    });
    expect(Object.fromEntries(parseTestResults("pytest", SAMPLES.pytest))).toEqual({
      "tests/test_a.py::test_one": "passed",
      "tests/test_a.py::test_two": "failed",
      "tests/test_b.py::test_three": "failed",
    });
    expect(Object.fromEntries(parseTestResults("tap", SAMPLES.tap))).toEqual({
      "caret zero": "passed",
      "nested one": "failed",
      "skipped one": "failed",
    });
    expect(Object.fromEntries(parseTestResults("check-h", SAMPLES["check-h"]))).toEqual({
      append_and_format: "passed",
      trim: "failed",
    });
    expect(Object.fromEntries(parseTestResults("gotest", SAMPLES.gotest))).toEqual({
      TestOne: "passed",
      TestTwo: "failed",
      TestSub: "failed",
      "TestSub/inner_case": "passed",
      "TestSub/bad": "failed",
      TestSkip: "failed",
    });
    expect(Object.fromEntries(parseTestResults("django", SAMPLES.django))).toEqual({
      "test_ascii (auth_tests.test_validators.UsernameValidatorsTests)": "passed",
      "test_unicode (auth_tests.test_validators.UsernameValidatorsTests)": "failed",
      "A docstring's first line stands for the test.": "passed",
      // a skip is reported (as SWE-bench's parser reports it) and did not pass
      "test_skip (auth_tests.test_validators.X)": "failed",
      "test_boom (auth_tests.test_validators.X)": "failed",
    });
    expect(Object.fromEntries(parseTestResults("sympy", SAMPLES.sympy))).toEqual({
      test_one: "passed",
      test_two: "failed",
      test_three: "failed",
      test_four: "passed",
      test_five: "failed",
    });
  });

  it("a test reported both passed and failed (a forged line beside the real one) failed", () => {
    expect(parseTestResults("check-h", "ok x\nFAIL x\nok x").get("x")).toBe("failed");
  });

  it("the script's grep pattern keeps exactly the lines the parser reads", () => {
    for (const format of Object.keys(SAMPLES) as ResultFormat[]) {
      const kept = execFileSync("grep", ["-E", resultLinePattern(format)], {
        input: SAMPLES[format],
        encoding: "utf8",
      });
      expect(parseTestResults(format, kept)).toEqual(parseTestResults(format, SAMPLES[format]));
    }
  });
});

describe("canary", () => {
  const spec = {
    file: "tests/t.py",
    prepend: "",
    append: "\ndef {name}():\n    assert {a} == {b}\n",
    id: "tests/t.py::{name}",
  };

  it("fills the template with its name and two different numbers", () => {
    expect(canaryOf(spec, "test_ab12", 7, 9)).toEqual({
      file: "tests/t.py",
      prepend: "",
      append: "\ndef test_ab12():\n    assert 7 == 9\n",
      id: "tests/t.py::test_ab12",
    });
    expect(() => canaryOf(spec, "test_ab12", 3, 3)).toThrow(/must differ/);
    expect(() => canaryOf(spec, "x; rm -rf /", 1, 2)).toThrow(/canary name/);
  });

  it("a run is believed only when its canary failed and the command said so", () => {
    const r = (c?: "passed" | "failed") => new Map(c ? [["c", c] as const] : []);
    expect(canaryVerdict(r("failed"), "c", 1)).toEqual({ ok: true });
    expect(canaryVerdict(r(), "c", 1)).toMatchObject({
      ok: false,
      kind: "missing",
      reason: expect.stringMatching(/did not report/),
    });
    expect(canaryVerdict(r("passed"), "c", 1)).toMatchObject({
      ok: false,
      kind: "passed",
      reason: expect.stringMatching(/tampered/),
    });
    expect(canaryVerdict(r("failed"), "c", 0)).toMatchObject({
      ok: false,
      kind: "exit_zero",
      reason: expect.stringMatching(/exit status/),
    });
  });
});
