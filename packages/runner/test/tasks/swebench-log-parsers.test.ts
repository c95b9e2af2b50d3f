import { describe, expect, it } from "vitest";
import { parseTestResults, resultLinePattern } from "../../src/scoring/results.js";
import { djangoLogEvents, sympyLogEvents } from "../../src/tasks/runner-logs.js";
import {
  gradedOutcomes,
  logParserLines,
  logParserOf,
  plainText,
  pytestLineEvents,
  pytestLogEvents,
  shortenPathParameter,
} from "../../src/tasks/swebench-log-parsers.js";
import {
  boundPackageList,
  boundTestTools,
  isUnpinnedPytest,
  PYTEST_BOUND,
  testCommandEnv,
} from "../../src/tasks/swebench-test-tools.js";

const ids = (events: readonly { id: string }[]) => events.map((e) => e.id);

describe("logParserOf", () => {
  it("names the reading SWE-bench's harness uses per repository, pytest otherwise", () => {
    expect(logParserOf("psf/requests")).toBe("pytest-short-paths");
    expect(logParserOf("Pylint-Dev/Pylint.git")).toBe("pytest-short-paths");
    expect(logParserOf("sphinx-doc/sphinx")).toBe("pytest-spaced");
    expect(logParserOf("mwaskom/seaborn")).toBe("seaborn");
    expect(logParserOf("matplotlib/matplotlib")).toBe("matplotlib");
    expect(logParserOf("pallets/flask")).toBe("pytest");
    expect(logParserOf("someone/else")).toBe("pytest");
  });
});

describe("pytest reading", () => {
  it("takes the first word after the status, a FAILED line's message apart", () => {
    expect(pytestLineEvents("pytest", "FAILED t.py::test_a - AssertionError: x - y")).toEqual([
      { id: "t.py::test_a", status: "FAILED" },
    ]);
    expect(ids(pytestLineEvents("pytest", "PASSED t.py::test_v[a b]"))).toEqual(["t.py::test_v[a"]);
    expect(pytestLineEvents("pytest", "XFAIL t.py::test_x - reason")).toEqual([
      { id: "t.py::test_x", status: "XFAIL" },
    ]);
  });
  it("reads no skip count, no bare status, no word that only starts with a status", () => {
    expect(pytestLineEvents("pytest", "SKIPPED [2] t.py:3: no")).toEqual([]);
    expect(pytestLineEvents("pytest", "PASSED")).toEqual([]);
    expect(pytestLineEvents("pytest", "PASSEDX t.py::a")).toEqual([]);
    expect(pytestLineEvents("pytest", "  PASSED t.py::a")).toEqual([]);
    expect(pytestLineEvents("pytest", "XPASS t.py::a")).toEqual([]);
  });
});

describe("pytest-short-paths reading", () => {
  it("shortens an absolute-path parameter to its last segment", () => {
    expect(
      ids(pytestLineEvents("pytest-short-paths", "PASSED t.py::test_p[/tmp/w/tests/data/a.txt]")),
    ).toEqual(["t.py::test_p[/a.txt]"]);
  });
  it("leaves `//` shares, globs, relative paths and unparametrized ids alone", () => {
    for (const id of ["t.py::p[//net/share]", "t.py::p[/a/*.py]", "t.py::p[rel/x.py]", "t.py::p"])
      expect(shortenPathParameter(id)).toBe(id);
    expect(shortenPathParameter("t.py::p[/a/b]")).toBe("t.py::p[/b]");
  });
});

describe("pytest-spaced reading", () => {
  it("keeps the whole id and also its first word (older releases' cut)", () => {
    expect(ids(pytestLineEvents("pytest-spaced", "PASSED t.py::test_n[one two]"))).toEqual([
      "t.py::test_n[one two]",
      "t.py::test_n[one",
    ]);
    expect(pytestLineEvents("pytest-spaced", "FAILED t.py::test_f - boom - x")).toEqual([
      { id: "t.py::test_f", status: "FAILED" },
    ]);
  });
  it("reads a verbose line ending in its status and removes colour codes", () => {
    expect(ids(pytestLineEvents("pytest-spaced", "t.py::test_a PASSED"))).toEqual(["t.py::test_a"]);
    expect(plainText("\u001b[32mPASSED\u001b[0m t.py::a")).toBe("PASSED t.py::a");
    expect(ids(pytestLineEvents("pytest-spaced", "\u001b[32mPASSED\u001b[0m t.py::a"))).toEqual(["t.py::a"]);
  });
});

describe("seaborn and matplotlib readings", () => {
  it("seaborn reads FAILED, PASSED and verbose `<id> PASSED [..]` lines, not ERROR", () => {
    expect(
      pytestLogEvents("seaborn", "t.py::a PASSED [ 50%]\nFAILED t.py::b - x\nERROR t.py::c\nPASSED t.py::d"),
    ).toEqual([
      { id: "t.py::a", status: "PASSED" },
      { id: "t.py::b", status: "FAILED" },
      { id: "t.py::d", status: "PASSED" },
    ]);
  });
  it("matplotlib reads MouseButton.LEFT/RIGHT as 1/3", () => {
    expect(
      ids(pytestLineEvents("matplotlib", "PASSED t.py::test_b[MouseButton.LEFT-MouseButton.RIGHT]")),
    ).toEqual(["t.py::test_b[1-3]"]);
  });
});

describe("gradedOutcomes", () => {
  it("passes PASSED and XFAIL; a test reported both ways did not pass", () => {
    const m = gradedOutcomes([
      { id: "a", status: "PASSED" },
      { id: "x", status: "XFAIL" },
      { id: "s", status: "SKIPPED" },
      { id: "b", status: "FAILED" },
      { id: "b", status: "PASSED" },
    ]);
    expect(Object.fromEntries(m)).toEqual({ a: "passed", x: "passed", s: "failed", b: "failed" });
  });
});

describe("django and sympy whole-log readings", () => {
  it("django: a broken line's later `ok`, skips, failure headers, 3.11 ids", () => {
    const log = [
      "test_a (m.C) ... ok",
      "test_b (m.C) ... Internal Server Error: /x/",
      "ok",
      "test_c (m.C) ... skipped 'no db'",
      "test_d (m.C.test_d) ... FAIL",
      "ERROR: test_e (m.C)",
    ].join("\n");
    expect(djangoLogEvents(log)).toEqual([
      { id: "test_a (m.C)", status: "PASSED" },
      { id: "test_b (m.C)", status: "PASSED" },
      { id: "test_c (m.C)", status: "SKIPPED" },
      { id: "test_d (m.C)", status: "FAILED" },
      { id: "test_e (m.C)", status: "FAILED" },
    ]);
  });
  it("sympy: verbose lines and failure headers", () => {
    expect(sympyLogEvents("test_a ok\ntest_b F\n____ sympy/x/tests/test_y.py:test_c ____")).toEqual([
      { id: "test_a", status: "PASSED" },
      { id: "test_b", status: "FAILED" },
      { id: "test_c", status: "FAILED" },
    ]);
  });
});

describe("the scorer's reading of a SWE-bench row's suite", () => {
  it("reads a requests log with short paths and grades XFAIL as SWE-bench does", () => {
    const out =
      "PASSED tests/t.py::test_p[/w/x/a.pem]\nXFAIL tests/t.py::test_x - why\nFAILED tests/t.py::test_f";
    expect(Object.fromEntries(parseTestResults("pytest", out, "pytest-short-paths"))).toEqual({
      "tests/t.py::test_p[/a.pem]": "passed",
      "tests/t.py::test_x": "passed",
      "tests/t.py::test_f": "failed",
    });
    // a catalog task (no reading named) keeps its stricter XFAIL
    expect(parseTestResults("pytest", out).get("tests/t.py::test_x")).toBe("failed");
  });
  it("keeps every line a reading reads in the scoring script's filter", () => {
    const keep = (pattern: string, line: string) =>
      new RegExp(pattern.replaceAll("[[:space:]]", "\\s")).test(line);
    expect(keep(logParserLines("pytest-spaced"), "t.py::a PASSED")).toBe(true);
    expect(keep(logParserLines("seaborn"), "t.py::a PASSED [ 10%]")).toBe(true);
    expect(keep(resultLinePattern("django"), "ok")).toBe(true);
    expect(keep(resultLinePattern("django"), "test_b (m.C) ... Internal Server Error: /x/")).toBe(true);
    expect(keep(resultLinePattern("pytest", "pytest"), "collected 3 items")).toBe(false);
  });
});

describe("test tools beyond the facts", () => {
  it("bounds an unpinned pytest, leaves pinned ones and other packages", () => {
    expect(isUnpinnedPytest("pytest")).toBe(true);
    expect(isUnpinnedPytest("pytest==7.4.0")).toBe(false);
    expect(isUnpinnedPytest("pytest-cov")).toBe(false);
    expect(boundTestTools(["numpy", "pytest", "pytest==7.4.0"])).toEqual({
      reqs: ["numpy", PYTEST_BOUND, "pytest==7.4.0"],
      bounded: true,
    });
    expect(boundTestTools(["pytest-mock"]).bounded).toBe(false);
  });
  it("bounds a pytest word of a package list and keeps the other shell words as written", () => {
    expect(boundPackageList("numpy 'scipy==1.5.2' pytest 'pandas<2.0.0'")).toEqual({
      packages: `numpy 'scipy==1.5.2' '${PYTEST_BOUND}' 'pandas<2.0.0'`,
      bounded: true,
    });
    expect(boundPackageList("mpmath flake8").bounded).toBe(false);
  });
  it("takes the environment assignments a test command starts with", () => {
    expect(
      testCommandEnv("PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"),
    ).toBe("PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning'");
    expect(testCommandEnv("A=1 B='x y' pytest -rA")).toBe("A=1 B='x y'");
    expect(testCommandEnv("pytest -rA")).toBe("");
    expect(testCommandEnv(undefined)).toBe("");
  });
});
