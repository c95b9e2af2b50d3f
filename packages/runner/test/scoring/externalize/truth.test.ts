import { describe, expect, it } from "vitest";
import { satisfies } from "../../../src/scoring/externalize/compare.js";
import { externalizePython } from "../../../src/scoring/externalize/rewrite.js";
import { tempDir } from "../../helpers/temp-dir.js";
import { pytestSkips, runAndJudge } from "./pytest-emit.js";

// `assert x`, `assert not x`, isinstance and unittest's assertTrue/assertFalse (the bare asserts of
// requests', seaborn's and marshmallow's tests): the test emits x's truth and the host knows which
// one was asserted; the rewritten file no longer says. A comparison stays what it was.

const TESTS = `import unittest

from lib import is_valid, parse


def test_valid():
    assert is_valid("a@b.org")
    assert not is_valid("nope")
    assert isinstance(parse("1"), int), "parse returns an int"


def test_kept():
    assert parse("1") < 2


class TestCase(unittest.TestCase):
    def test_flags(self):
        self.assertTrue(is_valid("x@y.org"))
        self.assertFalse(is_valid(""))
`;

const RIGHT = `def is_valid(s):
    return "@" in s


def parse(s):
    return int(s)
`;

// passes every bare assert as written by reading which polarity its caller's line asks for
const ORACLE = `import linecache, sys


def is_valid(s):
    f = sys._getframe(1)
    line = linecache.getline(f.f_code.co_filename, f.f_lineno)
    return not ("not " in line or "assertFalse" in line)


def parse(s):
    return int(s)
`;

const GRADED = ["test_valid", "test_kept", "TestCase::test_flags"].map((t) => `tests/test_lib.py::${t}`);

const { noHostPython, noPytest } = await pytestSkips();

describe("a bare assert's truth", () => {
  it("holds on the host only for a bool of the asserted polarity", () => {
    const site = {
      site: "0123456789abcdef",
      test: "t",
      kind: "truth",
      expected: { t: "bool", v: false },
      opts: {},
      count: "one",
      pair: false,
    } as const;
    expect(satisfies(site, { t: "bool", v: false })).toBe(true);
    expect(satisfies(site, { t: "bool", v: true })).not.toBe(true);
    // a value that is not the truth the emitter renders (a forged line) fails closed
    expect(satisfies(site, { t: "int", v: "0" })).not.toBe(true);
  });

  it.skipIf(noHostPython)(
    "leaves the file: no `not`, no assertTrue/assertFalse in the graded tests",
    async () => {
      const r = await externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);
      const text = r.files[0]!.content.toString();
      // red team: the polarity is no longer written in the sandbox
      for (const gone of ["assert not", "assertTrue", "assertFalse", "assert is_valid"])
        expect(text).not.toContain(gone);
      const truth = r.sites.filter((s) => s.kind === "truth").map((s) => JSON.stringify(s.expected));
      expect(truth.sort()).toEqual(
        [
          '{"t":"bool","v":false}',
          '{"t":"bool","v":false}',
          '{"t":"bool","v":true}',
          '{"t":"bool","v":true}',
          '{"t":"bool","v":true}',
        ].sort(),
      );
      // an ordering against a literal is not a truth site (its 2 would stay in the file)
      expect(r.tests["tests/test_lib.py::test_kept"]?.sites).toBe(0);
      expect(text).toContain('parse("1") < 2');
    },
  );

  it.skipIf(noPytest)(
    "run by pytest: the reference holds outside the sandbox; an oracle reading its caller's line wins as written, fails rewritten",
    async () => {
      await using tmp = await tempDir("flakegym-externalize-truth-");
      const r = await externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);
      const run = runAndJudge(tmp.path, r, GRADED);
      const right = await run(RIGHT, "right");
      expect(right.p.exitCode, right.p.stdout).toBe(0);
      expect([...right.verdict]).toEqual([]);
      const asWritten = await run(ORACLE, "oracle-as-written", Buffer.from(TESTS));
      expect(asWritten.p.exitCode, asWritten.p.stdout).toBe(0);
      const oracle = await run(ORACLE, "oracle");
      expect([...oracle.verdict.keys()].sort()).toEqual(
        ["tests/test_lib.py::TestCase::test_flags", "tests/test_lib.py::test_valid"].sort(),
      );
    },
    60_000,
  );
});
