import { describe, expect, it } from "vitest";
import { externalizePython } from "../../../src/scoring/externalize/rewrite.js";
import { tempDir } from "../../helpers/temp-dir.js";
import { pytestSkips, runAndJudge } from "./pytest-emit.js";

// pytester's checks (pytest's own suite and plugins test this way): fnmatch_lines, re_match_lines,
// no_fnmatch_line, assert_outcomes and assertoutcome. The patterns and counts leave the file; the
// test emits the inner run's lines or counts, and the scorer matches them on the host.

const TESTS = `import pytest

pytest_plugins = "pytester"


def _inner(pytester):
    pytester.makepyfile(
        "from lib import greet\\n"
        "def test_a():\\n    print(greet())\\n    assert greet().startswith('hello')\\n"
        "def test_b():\\n    assert len(greet()) == 11\\n"
    )
    return pytester.runpytest_inprocess("-s", "-v")


def test_lines(pytester):
    result = _inner(pytester)
    result.stdout.fnmatch_lines(["*::test_a*hello world", "PASSED"], consecutive=True)
    result.stdout.re_match_lines([r".*test_b PASSED"])
    result.stdout.no_fnmatch_line("*FAILED*")


def test_outcomes(pytester):
    _inner(pytester).assert_outcomes(passed=2)


def test_recorder(pytester):
    pytester.makepyfile("from lib import greet\\ndef test_c():\\n    assert greet() == 'hello world'\\n")
    rec = pytester.inline_run()
    rec.assertoutcome(passed=1)


def test_multiline(pytester):
    _inner(pytester).stdout.fnmatch_lines("""
        *::test_a hello*
        PASSED
    """)


def test_kept(pytester):
    _inner(pytester).stdout.fnmatch_lines(["*" + "hello" + "*"], consecutive=len("x") > 0)
`;

const GRADED = ["test_lines", "test_outcomes", "test_recorder", "test_multiline", "test_kept"].map(
  (t) => `tests/test_plugin.py::${t}`,
);

const { noHostPython, noPytest } = await pytestSkips();

describe("pytester's output and outcome checks, externalized", () => {
  it.skipIf(noHostPython)(
    "takes the patterns and counts out of the file, keeps a dedented string",
    async () => {
      const r = await externalizePython(
        [{ path: "tests/test_plugin.py", content: Buffer.from(TESTS) }],
        GRADED,
      );
      const text = r.files[0]!.content.toString();
      for (const gone of ["*::test_a*hello world", "test_b PASSED", "*FAILED*", "passed=2", "passed=1"])
        expect(text).not.toContain(gone);
      expect(text).toContain("_fg_lines((result.stdout))");
      expect(text).toContain(
        "_fg_outcomes((_inner(pytester)), ('passed', 'skipped', 'failed', 'errors', 'xpassed', 'xfailed',))",
      );
      expect(text).toContain("_fg_outcome3((rec))");
      expect(r.sites.map((s) => `${s.test.split("::").at(-1)}:${s.kind}`).sort()).toEqual([
        "test_lines:lines",
        "test_lines:lines",
        "test_lines:lines",
        "test_multiline:lines",
        "test_outcomes:eq",
        "test_recorder:eq",
      ]);
      expect(r.tests["tests/test_plugin.py::test_kept"]?.kept).toEqual([
        "an fnmatch_lines keyword externalization does not handle",
      ]);
    },
  );

  it.skipIf(noPytest)(
    "run by pytest (needs pytest on the host's python3): the right plugin passes outside the sandbox, a wrong one fails",
    async () => {
      await using tmp = await tempDir("flakegym-externalize-pytester-");
      const r = await externalizePython(
        [{ path: "tests/test_plugin.py", content: Buffer.from(TESTS) }],
        GRADED,
      );
      const run = runAndJudge(tmp.path, r, GRADED, "tests/test_plugin.py");
      const RIGHT = "def greet():\n    return 'hello world'\n";
      const WRONG = "def greet():\n    return 'hello there!'\n";
      // as written, the wrong plugin fails the three checks it breaks (the host must agree)
      expect((await run(WRONG, "wrong-as-written", Buffer.from(TESTS))).p.stdout).toMatch(/3 failed/);
      const right = await run(RIGHT, "right");
      expect(right.p.exitCode, right.p.stdout).toBe(0);
      expect([...right.verdict]).toEqual([]);
      // the inner run fails test_b and test_c; every outer test passes in the sandbox (nothing is
      // checked there any more), and fail on the host
      const wrong = await run(WRONG, "wrong");
      expect(wrong.p.stdout).toMatch(/5 passed/);
      expect([...wrong.verdict.keys()].sort()).toEqual(GRADED.slice(0, 3).sort());
    },
    90_000,
  );
});
