import { describe, expect, it } from "vitest";
import { externalizePython } from "../../../src/scoring/externalize/rewrite.js";
import { tempDir } from "../../helpers/temp-dir.js";
import { pytestSkips, runAndJudge } from "./pytest-emit.js";

// requests' CaseInsensitiveDict tests: `keys = frozenset(["Spam", "Eggs"])` then
// `assert frozenset(cid) == keys`. The expected side is a builtin of literals: the host evaluates
// it and it leaves the file, unless the file rebinds the builtin's name.

const TESTS = `from lib import names


def test_keys():
    keys = frozenset(["Spam", "Eggs"])
    assert frozenset(names()) == keys
    assert sorted(names()) == sorted(("Spam", "Eggs"))


def test_count():
    assert len(names()) == len(["a", "b"])
`;

// a file that binds `sorted` itself: its sorted(...) is not the builtin
const SHADOWING = `from lib import names
from helpers import sorted


def test_sorted():
    assert names() == sorted(["b", "a"])
`;

const RIGHT = `def names():
    return ["Eggs", "Spam"]
`;

// reads the expected value its caller holds
const ORACLE = `import sys


def names():
    caller = sys._getframe(1).f_locals
    return list(caller.get("keys") or ("Eggs", "Spam", "x"))
`;

const GRADED = ["tests/test_lib.py::test_keys", "tests/test_lib.py::test_count"];
const { noHostPython, noPytest } = await pytestSkips();
const rewrite = () => externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);

describe("an expected side made of pure builtins of literals", () => {
  it.skipIf(noHostPython)("is evaluated on the host and leaves the file; a rebound name stays", async () => {
    const r = await rewrite();
    const text = r.files[0]!.content.toString();
    for (const gone of ['"Spam"', '"Eggs"', '["a", "b"]']) expect(text).not.toContain(gone);
    expect(r.sites.map((s) => [s.kind, s.expected, s.pair])).toEqual([
      ["eq", { t: "set", v: [expect.anything(), expect.anything()] }, false],
      [
        "eq",
        {
          t: "list",
          v: [
            { t: "str", v: "Eggs" },
            { t: "str", v: "Spam" },
          ],
        },
        false,
      ],
      ["eq", { t: "int", v: "2" }, false],
    ]);
    const s = await externalizePython(
      [{ path: "tests/test_s.py", content: Buffer.from(SHADOWING) }],
      ["tests/test_s.py::test_sorted"],
    );
    expect(s.sites.every((x) => x.pair)).toBe(true);
    expect(s.files[0]!.content.toString()).toContain('sorted(["b", "a"])');
  });

  it.skipIf(noPytest)(
    "run by pytest: the reference holds outside the sandbox; an oracle reading its caller's locals wins as written, fails rewritten",
    async () => {
      await using tmp = await tempDir("flakegym-externalize-pure-");
      const r = await rewrite();
      const run = runAndJudge(tmp.path, r, GRADED);
      const right = await run(RIGHT, "right");
      expect(right.p.exitCode, right.p.stdout).toBe(0);
      expect([...right.verdict]).toEqual([]);
      const asWritten = await run(ORACLE, "oracle-as-written", TESTS);
      expect(asWritten.p.stdout).toMatch(/1 failed, 1 passed/);
      const oracle = await run(ORACLE, "oracle");
      expect([...oracle.verdict.keys()]).toEqual([
        "tests/test_lib.py::test_keys",
        "tests/test_lib.py::test_count",
      ]);
    },
    60_000,
  );
});
