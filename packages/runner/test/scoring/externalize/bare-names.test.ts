import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { externalizeGraded } from "../../../src/scoring/externalize/guard.js";
import { externalizePython } from "../../../src/scoring/externalize/rewrite.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { skipWithoutHostPython } from "../../helpers/host-python.js";
import { tempDir } from "../../helpers/temp-dir.js";

// SymPy's bin/test grades bare function names (`test_x`) and is not pytest: no node id reaches
// the test process. The rewriter writes each site's test name into the file, and a name defined
// in two hidden files is left out (its emissions could not be told apart).

const A = `from lib import half


def test_half():
    assert half(4) == 2


def test_raise():
    with raises(TypeError):
        half(None)


def test_dup():
    assert half(2) == 1


@XFAIL
def test_xfail():
    assert half(3) == 2
`;
const B = `from lib import half


def test_dup():
    assert half(6) == 3
`;
const FILES = [
  { path: "sympy/core/tests/test_a.py", content: Buffer.from(A) },
  { path: "sympy/core/tests/test_b.py", content: Buffer.from(B) },
];
const GRADED = ["test_half", "test_raise", "test_dup", "test_xfail"];

// A runner as SymPy's calls tests: the file exec'd into a dict, every test_ function called.
const RUNNER = `import sys
from contextlib import contextmanager
@contextmanager
def raises(exc):
    try:
        yield
    except exc:
        return
    raise AssertionError("DID NOT RAISE")
def XFAIL(f):
    def w():
        try:
            f()
        except AssertionError:
            return
        raise AssertionError("XPASS")
    return w
gl = {"__file__": sys.argv[1], "raises": raises, "XFAIL": XFAIL}
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), gl)
for name, f in list(gl.items()):
    if name.startswith("test_") and callable(f):
        try:
            f()
            print(name, "ok")
        except Exception as e:
            print(name, "F", type(e).__name__)
`;

const noHostPython = skipWithoutHostPython("the host rewriter's runs");

describe("bare test names (SymPy's runner)", () => {
  it.skipIf(noHostPython)(
    "sites are named by their function; a name defined twice stays with decoys",
    async () => {
      const r = await externalizePython(FILES, GRADED, undefined, true);
      expect(new Set(r.sites.map((s) => s.test))).toEqual(new Set(["test_half", "test_raise"]));
      expect(r.tests.test_dup).toBeUndefined();
      expect(r.tests.test_xfail?.kept).toEqual([
        "a decorated test of a bare-name runner (XFAIL, slow) stays as written",
      ]);
      const text = r.files[0]!.content.toString();
      expect(text).not.toContain("half(4) == 2");
      expect(text).toContain("_fg_static.update(");
      // wired into scoring: a sympy suite's bare names are externalized, the rest left to decoys
      const g = await externalizeGraded("sympy", FILES, GRADED);
      expect(g.externalized.sort()).toEqual(["test_half", "test_raise"]);
      expect(g.decoyed.sort()).toEqual(["test_dup", "test_xfail"]);
    },
  );

  it.skipIf(noHostPython)(
    "run by a runner that is not pytest: the right code passes outside the sandbox, a wrong one fails",
    async () => {
      await using tmp = await tempDir("flakegym-externalize-bare-");
      const r = await externalizePython(FILES, GRADED, undefined, true);
      const run = async (impl: string, name: string) => {
        const dir = join(tmp.path, name);
        await mkdir(dir, { recursive: true });
        await writeFile(join(dir, "lib.py"), impl);
        await writeFile(join(dir, "test_a.py"), r.files[0]!.content);
        await writeFile(join(dir, "runner.py"), RUNNER);
        const emit = join(dir, "emit");
        const p = await execa("python3", ["runner.py", "test_a.py"], {
          cwd: dir,
          env: { FLAKEGYM_EMIT: emit, PYTHONPATH: dir },
          reject: false,
        });
        const text = await readFile(emit, "utf8").catch(() => undefined);
        return { p, verdict: externalVerdict(GRADED, r.sites, text) };
      };
      const right = await run("def half(n):\n    return n // 2\n", "right");
      expect(right.p.stdout).toMatch(/test_half ok\ntest_raise ok\ntest_dup ok\ntest_xfail ok/);
      expect([...right.verdict]).toEqual([]);
      // the externalized tests pass in the runner (nothing is compared there) and fail on the
      // host; test_dup, kept as written, fails in the runner
      const wrong = await run("def half(n):\n    return 3 if n is not None else 0\n", "wrong");
      expect(wrong.p.stdout).toMatch(/test_half ok\ntest_raise ok\ntest_dup F/);
      expect([...wrong.verdict.keys()].sort()).toEqual(["test_half", "test_raise"]);
    },
    60_000,
  );
});
