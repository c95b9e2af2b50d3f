import { describe, expect, it } from "vitest";
import { externalizePython } from "../../../src/scoring/externalize/rewrite.js";
import { tempDir } from "../../helpers/temp-dir.js";
import { pytestSkips, runAndJudge } from "./pytest-emit.js";

// Shapes a real row's tests have (marshmallow's test_schema.py): an assertion on one side of an if
// on a parameter (the case taking the other side emits nothing, which must not read as a
// suppressed emission), and a containment in a dict's keys view. The reference implementation
// must pass outside the sandbox too; a wrong one must still fail where the assertion is checked.

const TESTS = `import pytest

from lib import build, keys_of, run


@pytest.mark.parametrize("attribute", ("f1", None))
def test_collision(attribute):
    if attribute is None:
        build(attribute)
    else:
        with pytest.raises(ValueError, match=attribute):
            build(attribute)


@pytest.mark.parametrize("mode,n", [("strict", 1), ("lax", 2), pytest.param("off", 3, id="off")])
def test_mode(mode, n):
    r = run(mode, n)
    if mode == "strict":
        assert r == "S1"
    elif mode in ("lax",):
        assert r == "L2"
    else:
        assert r is None


@pytest.mark.parametrize("n", [1, 2])
def test_kept(n):
    if run("strict", n) is not None:
        assert n in (1, 2)


def test_keys_view():
    assert "upper" not in keys_of()
    assert "name" in keys_of()
`;

const RIGHT = `def build(attribute):
    if attribute is not None:
        raise ValueError("duplicate " + attribute)


def keys_of():
    return {"name": 1}.keys()


def run(mode, n):
    return {"strict": "S", "lax": "L"}[mode] + str(n) if mode != "off" else None
`;

const WRONG = `def build(attribute):
    return None


def keys_of():
    return {"name": 1, "upper": 2}.keys()


def run(mode, n):
    # steers the test to the side of its if that asserts nothing it cannot pass: the caller's
    # \`mode\` becomes "off" (a frame write) and the answer None
    import ctypes, sys
    f = sys._getframe(1)
    f.f_locals["mode"] = "off"
    ctypes.pythonapi.PyFrame_LocalsToFast(ctypes.py_object(f), ctypes.c_int(0))
    return None
`;

const GRADED = [
  "test_collision[f1]",
  "test_collision[None]",
  "test_mode[strict-1]",
  "test_mode[lax-2]",
  "test_mode[off]",
  "test_kept[1]",
  "test_keys_view",
].map((t) => `tests/test_lib.py::${t}`);

const { noHostPython, noPytest } = await pytestSkips();

describe("externalized assertions on one side of a branch, and dict views", () => {
  it.skipIf(noHostPython)(
    "an if on the parameters: a site per side with the cases that run it; an if on a computed value stays; a keys view is a site",
    async () => {
      const r = await externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);
      expect(r.tests["tests/test_lib.py::test_kept"]?.kept).toEqual([
        "it runs on one side of an if, match or except whose side per case the host cannot evaluate (kept as written)",
      ]);
      const text = r.files[0]!.content.toString();
      for (const gone of ['"S1"', '"L2"']) expect(text).not.toContain(gone);
      const shown = r.sites.map(
        (s) =>
          `${s.test.split("::").at(-1)}:${s.kind}:${s.count}:${s.pair ? "pair" : "secret"}:${s.cases ? `${s.cases.run.join(",")}/${s.cases.skip.join(",")}` : "all"}`,
      );
      expect(shown.sort()).toEqual([
        "test_collision:raises:one:pair:f1/None",
        "test_keys_view:in:one:secret:all",
        "test_keys_view:notin:one:secret:all",
        "test_mode:eq:one:secret:lax-2/strict-1,off",
        "test_mode:eq:one:secret:strict-1/lax-2,off",
        "test_mode:is:one:secret:off/strict-1,lax-2",
      ]);
    },
  );

  it.skipIf(noPytest)(
    "run by pytest (needs pytest on the host's python3): the reference passes every case outside the sandbox, a wrong one fails",
    async () => {
      await using tmp = await tempDir("flakegym-externalize-branches-");
      const r = await externalizePython([{ path: "tests/test_lib.py", content: Buffer.from(TESTS) }], GRADED);
      const run = runAndJudge(tmp.path, r, GRADED);
      const right = await run(RIGHT, "right");
      expect(right.p.exitCode, right.p.stdout).toBe(0);
      expect([...right.verdict]).toEqual([]);
      // as written, the steered cases pass: they take the side that asserts r is None
      const asWritten = await run(WRONG, "wrong-as-written", Buffer.from(TESTS));
      expect(asWritten.p.stdout).not.toMatch(/FAILED tests\/test_lib.py::test_mode/);
      expect(asWritten.p.stdout).toMatch(/2 failed/);
      const wrong = await run(WRONG, "wrong");
      // every check left the sandbox: the raises (a pair), the steered cases (their site did not
      // run where the host says it must) and the keys view's containment fail outside it
      expect(wrong.p.exitCode, wrong.p.stdout).toBe(0);
      expect([...wrong.verdict.keys()].sort()).toEqual(
        ["test_collision[f1]", "test_keys_view", "test_mode[lax-2]", "test_mode[strict-1]"].map(
          (t) => `tests/test_lib.py::${t}`,
        ),
      );
    },
    60_000,
  );
});
