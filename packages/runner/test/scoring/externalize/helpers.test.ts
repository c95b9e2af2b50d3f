import { describe, expect, it } from "vitest";
import { externalizePython } from "../../../src/scoring/externalize/rewrite.js";
import { tempDir } from "../../helpers/temp-dir.js";
import { pytestSkips, runAndJudge } from "./pytest-emit.js";

// Helpers that assert (pylint's `self._runtest(args, code=2)`, seaborn's `self.check_…(p, …)`):
// the graded test calls a function of its file whose body holds the assertion. The helper's
// assertions emit per call site; a parameter read only as the expected side leaves every call.

const TESTS = `from lib import run, size

STATUS = {"a": 3}


def check(value, want):
    assert size(value) == want, f"size of {value} should be {want}"


def check_unit(value):
    assert size(value).endswith(" KiB")
    assert size(value) != "0.0 KiB"


def check_other(value):
    assert size(value) == "1 B"


def test_sizes():
    check(1024, "1.0 KiB")
    check(2048, want="2.0 KiB")
    for v in (1024, 3072):
        check_unit(v)


def test_not_graded():
    check_other(1)
    check(1, "1 B")


class TestRun:
    def _runtest(self, args, code=None):
        got = run(args)
        msg = f"expected status {code}, got {got}"
        assert got == code, msg

    def test_exit(self):
        self._runtest(["a"], code=3)
        self._runtest([])
        self._runtest(["b"], code=STATUS["a"])
`;

const RIGHT = `def size(v):
    return "1 B" if v < 1024 else f"{v / 1024:.1f} KiB"


def run(args):
    return 3 if args else None
`;

// reads the expected value its caller holds (the helper's parameter) and returns it
const ORACLE = `import sys


def size(v):
    caller = sys._getframe(1).f_locals
    return caller["want"] if "want" in caller else ("1 B" if v < 1024 else f"{v / 1024:.1f} KiB")


def run(args):
    return sys._getframe(1).f_locals.get("code")
`;

const GRADED = ["tests/test_lib.py::test_sizes", "tests/test_lib.py::TestRun::test_exit"];

const { noHostPython, noPytest } = await pytestSkips();

const rewrite = () => externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);

describe("a helper that asserts", () => {
  it.skipIf(noHostPython)(
    "keeps one site per helper assertion and call, its expected values on the host",
    async () => {
      const r = await rewrite();
      const text = r.files[0]!.content.toString();
      // red team: no expected value a helper compares with is left in the file
      // (a truth site takes out one bit, not its operands: endswith(" KiB") stays)
      for (const gone of ['"1.0 KiB"', '"2.0 KiB"', "code=3", '"0.0 KiB"']) expect(text).not.toContain(gone);
      const of = (t: string) => r.sites.filter((s) => s.test === `tests/test_lib.py::${t}`);
      // test_sizes: check ×2 (one site each, its call's argument), check_unit ×1 call in a loop (2 sites)
      expect(
        of("test_sizes")
          .map((s) => [s.kind, JSON.stringify(s.expected), s.count])
          .sort(),
      ).toEqual(
        [
          ["eq", '{"t":"str","v":"1.0 KiB"}', "one"],
          ["eq", '{"t":"str","v":"2.0 KiB"}', "one"],
          ["ne", '{"t":"str","v":"0.0 KiB"}', "any"],
          ["truth", '{"t":"bool","v":true}', "any"],
        ].sort(),
      );
      // a method helper's keyword argument, and its default where the call passes none
      // (a call that computes it, `code=STATUS["a"]`, emits both sides: a pair)
      expect(of("TestRun::test_exit").map((s) => [JSON.stringify(s.expected), s.pair, s.count])).toEqual([
        ['{"t":"int","v":"3"}', false, "one"],
        ['{"t":"none"}', false, "one"],
        ["null", true, "one"],
      ]);
      // a helper only a test outside the graded ones calls stays as written; one a graded test calls
      // too checks nothing at the other's call (its result is not read)
      expect(text).toContain('assert size(value) == "1 B"');
      expect(text).toContain('    check(1, "1 B")');
      expect(r.tests["tests/test_lib.py::test_sizes"]?.sites).toBe(4);
    },
  );

  it.skipIf(noHostPython)(
    "stays as written where a graded test kept as written (recorded opaque) calls it",
    async () => {
      const kept = "tests/test_lib.py::TestRun::test_exit";
      const r = await externalizePython(
        [{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }],
        GRADED.filter((g) => g !== kept),
        undefined,
        false,
        [kept],
      );
      const text = r.files[0]!.content.toString();
      expect(text).toContain("assert got == code, msg");
      expect(text).toContain('self._runtest(["a"], code=3)');
      expect(r.sites.some((s) => s.test === kept)).toBe(false);
    },
  );

  it.skipIf(noPytest)(
    "run by pytest: the reference holds outside the sandbox; an oracle reading the helper's parameter wins as written, fails rewritten",
    async () => {
      await using tmp = await tempDir("flakegym-externalize-helpers-");
      const r = await rewrite();
      const run = runAndJudge(tmp.path, r, GRADED);
      const right = await run(RIGHT, "right");
      expect(right.p.exitCode, right.p.stdout).toBe(0);
      expect([...right.verdict]).toEqual([]);
      const asWritten = await run(ORACLE, "oracle-as-written", Buffer.from(TESTS));
      expect(asWritten.p.exitCode, asWritten.p.stdout).toBe(0);
      const oracle = await run(ORACLE, "oracle");
      expect([...oracle.verdict.keys()].sort()).toEqual([...GRADED].sort());
      // a wrong helper result fails on the host, named
      const wrong = await run(RIGHT.replace("3 if args", "4 if args"), "wrong");
      expect(wrong.verdict.get("tests/test_lib.py::TestRun::test_exit")).toMatch(
        /failed outside the sandbox/,
      );
    },
    60_000,
  );
});
