import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { externalizePython } from "../../../src/scoring/externalize/rewrite.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { skipWithoutHostPython } from "../../helpers/host-python.js";
import { tempDir } from "../../helpers/temp-dir.js";

// The host rewriter on a test file with every assertion shape it takes, then the rewritten file run
// for real by pytest against a right and a wrong implementation: the expected values are gone from
// the file, and the scorer's comparison of the emissions passes the right one only.

const TESTS = String.raw`"""Tests of calc."""
from __future__ import annotations

import unittest

import pytest

from calc import CalcError, div, parse, when, words


def test_eq():
    assert div(6, 3) == 2.0


def test_literal_first_and_format():
    assert "<n=3>".format() == parse("3")


def test_approx():
    assert div(1, 3) == pytest.approx(0.333333333)


def test_in_and_not_in():
    assert "two" in words(2)
    assert "zero" not in words(2)


def test_raises_custom_with_match():
    with pytest.raises(CalcError, match=r"by zero\Z"):
        div(1, 0)


@pytest.mark.parametrize("n", [1, 2])
def test_parametrized(n):
    assert words(n)[0] == "one"


def test_loop():
    for n in (1, 2):
        assert words(n)[n - 1] != "three"


def test_raises_an_alias_attribute():
    # pytest.fail.Exception names _pytest.outcomes.Failed (a BaseException): left in the test
    with pytest.raises(pytest.fail.Exception):
        pytest.fail("boom")


@pytest.mark.parametrize("exception", [ZeroDivisionError])
def test_raises_a_parameter(exception):
    # the class is the parameter's value: left in the test
    with pytest.raises(exception):
        div(1, 0) if False else 1 / 0


def test_raises_info_read_whole():
    # str() of pytest's ExceptionInfo: the block stays pytest's own
    with pytest.raises(CalcError) as excinfo:
        div(1, 0)
    assert "CalcError" in str(excinfo)


def test_loop_over_many():
    for _ in range(20000):
        assert words(1)[0] != "three"


def test_computed_expected_compared_outside():
    assert div(4, 2) == div(8, 4)


def test_date_compared_in_the_test():
    import datetime

    assert when() == datetime.date(2020, 1, 1)


def test_env_dropped_by_code_under_test():
    import os

    # what an in-process inner pytest run (pytester.runpytest_inprocess) leaves behind
    os.environ.pop("PYTEST_CURRENT_TEST", None)
    assert div(6, 3) == 2.0


class TestUnit(unittest.TestCase):
    def test_unittest(self):
        self.assertEqual(parse("7"), "<n=7>")
        self.assertAlmostEqual(div(2, 3), 0.6666667)
        self.assertIn("one", words(1))
        with self.assertRaises(ZeroDivisionError):
            1 / 0
`;

const RIGHT = `class CalcError(Exception):
    pass


def div(a, b):
    if b == 0:
        raise CalcError("division by zero")
    return a / b


def parse(s):
    return "<n=%s>" % s


def words(n):
    return ["one", "two"][:n]


def when():
    import datetime
    return datetime.date(2020, 1, 1)
`;
const WRONG = RIGHT.replace('"division by zero"', '"div by zero!"')
  .replace('"<n=%s>"', '"<n:%s>"')
  .replace("date(2020, 1, 1)", "date(2021, 1, 1)");

const GRADED = [
  "test_eq",
  "test_literal_first_and_format",
  "test_approx",
  "test_in_and_not_in",
  "test_raises_custom_with_match",
  "test_parametrized[1]",
  "test_parametrized[2]",
  "test_loop",
  "test_loop_over_many",
  "test_raises_an_alias_attribute",
  "test_raises_a_parameter[ZeroDivisionError]",
  "test_raises_info_read_whole",
  "test_computed_expected_compared_outside",
  "test_date_compared_in_the_test",
  "test_env_dropped_by_code_under_test",
  "TestUnit::test_unittest",
].map((t) => `tests/test_calc.py::${t}`);

const noHostPython = skipWithoutHostPython("the host rewriter's runs");
const hasPytest = (await execa("python3", ["-c", "import pytest"], { reject: false })).exitCode === 0;
if (!noHostPython && !hasPytest)
  console.log(
    "skipped the rewritten file's pytest run: the host's python3 has no pytest (sh scripts/ensure-system-deps installs it)",
  );

describe("the host rewriter (scoring/externalize)", () => {
  it.skipIf(noHostPython)(
    "takes every literal expected value out of the graded tests; a computed one is emitted beside",
    async () => {
      const r = await externalizePython(
        [{ path: "tests/test_calc.py", content: Buffer.from(TESTS) }],
        GRADED,
      );
      const text = r.files[0]!.content.toString("utf8");
      for (const gone of [
        "2.0",
        "0.333333333",
        '"two" in',
        '"zero"',
        "by zero",
        "0.6666667",
        '"<n=7>"',
        "<n=3>",
      ])
        expect(text, gone).not.toContain(gone);
      expect(text).toMatch(/_fg_emit2\("[0-9a-f]{16}", "eq", \(div\(4, 2\)\), \(div\(8, 4\)\)\)/);
      expect(text).toContain("with pytest.raises(pytest.fail.Exception):");
      expect(text).toContain("with pytest.raises(exception):");
      expect(text).toContain("with pytest.raises(CalcError) as excinfo:");
      expect(r.tests["tests/test_calc.py::test_raises_an_alias_attribute"]?.sites ?? 0).toBe(0);
      expect(text).toMatch(/^"""Tests of calc."""\nfrom __future__ import annotations\nimport os as _fg_os/);
      expect(r.tests["tests/test_calc.py::test_computed_expected_compared_outside"]).toEqual({
        sites: 1,
        kept: [],
      });
      expect(r.sites.filter((s) => s.pair).map((s) => s.test)).toEqual([
        "tests/test_calc.py::test_computed_expected_compared_outside",
        "tests/test_calc.py::test_date_compared_in_the_test",
      ]);
      const kinds = r.sites.map((s) => `${s.test.split("::").at(-1)}:${s.kind}:${s.count}`).sort();
      expect(kinds).toEqual(
        [
          "test_approx:approx:one",
          "test_computed_expected_compared_outside:eq:one",
          "test_date_compared_in_the_test:eq:one",
          "test_env_dropped_by_code_under_test:eq:one",
          "test_eq:eq:one",
          "test_in_and_not_in:in:one",
          "test_in_and_not_in:notin:one",
          "test_literal_first_and_format:eq:one",
          "test_loop:ne:any",
          "test_loop_over_many:ne:any",
          "test_parametrized:eq:one",
          "test_raises_custom_with_match:raises:one",
          "test_raises_info_read_whole:in:one",
          "test_unittest:almost:one",
          "test_unittest:eq:one",
          "test_unittest:in:one",
          "test_unittest:raises:one",
        ].sort(),
      );
    },
  );

  it.skipIf(noHostPython || !hasPytest)(
    "run by pytest: a right implementation passes outside the sandbox, a wrong one fails (no pytest on the host's python3: skipped)",
    async () => {
      const tmp = await tempDir("flakegym-externalize-");
      try {
        const r = await externalizePython(
          [{ path: "tests/test_calc.py", content: Buffer.from(TESTS) }],
          GRADED,
        );
        const verdictWith = async (impl: string, name: string) => {
          const dir = join(tmp.path, name);
          await mkdir(join(dir, "tests"), { recursive: true });
          await writeFile(join(dir, "calc.py"), impl);
          await writeFile(join(dir, "tests/test_calc.py"), r.files[0]!.content);
          const emit = join(dir, "emit");
          const run = await execa("python3", ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], {
            cwd: dir,
            env: { FLAKEGYM_EMIT: emit, PYTHONPATH: dir },
            reject: false,
          });
          const text = await readFile(emit, "utf8").catch(() => undefined);
          return {
            run,
            lines: text?.split("\n").length ?? 0,
            verdict: externalVerdict(GRADED, r.sites, text),
          };
        };
        const right = await verdictWith(RIGHT, "right");
        expect(right.run.exitCode, right.run.stdout).toBe(0);
        expect([...right.verdict]).toEqual([]);
        // a loop's 20 000 equal emissions are one line (count "any": each distinct value is judged)
        expect(right.lines).toBeLessThan(60);
        const wrong = await verdictWith(WRONG, "wrong");
        // the wrong one's tests "pass" in the sandbox (nothing compares there) and fail outside
        expect(wrong.run.exitCode, wrong.run.stdout).toBe(0);
        expect([...wrong.verdict.keys()].sort()).toEqual(
          [
            "tests/test_calc.py::test_literal_first_and_format",
            "tests/test_calc.py::test_date_compared_in_the_test",
            "tests/test_calc.py::test_raises_custom_with_match",
            "tests/test_calc.py::TestUnit::test_unittest",
          ].sort(),
        );
      } finally {
        await tmp.cleanup();
      }
    },
    60_000,
  );
});
