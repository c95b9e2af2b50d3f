import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { guardFiles, namedElsewhere } from "../../../src/scoring/decoys/guard.js";
import { skipWithoutHostPython } from "../../helpers/host-python.js";
import { tempDir } from "../../helpers/temp-dir.js";

// Issue 41, pytest-5262's capture tests: a decoy renames its graded test, so a test that calls it
// by name (`self.test_simple_many(tmpfile)`) failed with AttributeError, and a method a subclass
// inherits ran under the subclass with the fresh name (its graded id never reported): gold 0.
// Such tests keep their names (no decoy), said why.

const FILE = "tests/test_cap.py";
const TESTS = `from cap import snap


class TestFD:
    def test_simple(self):
        assert snap("hello") == "hello"

    def test_simple_many(self):
        for _ in range(3):
            self.test_simple()


class TestStd:
    def test_nulled(self):
        assert snap("x") == "x"


class TestStdFD(TestStd):
    pass


def test_alone():
    assert snap("a") == "a"
`;
const IDS = [
  "TestFD::test_simple",
  "TestFD::test_simple_many",
  "TestStd::test_nulled",
  "TestStdFD::test_nulled",
  "test_alone",
].map((t) => `${FILE}::${t}`);
let seed = 3;
const rand = (n: number) => {
  seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
  return (seed >>> 16) % n;
};

describe("namedElsewhere (a test that must keep its name)", () => {
  it("names a test another test calls and a method of a class another class inherits; not a lone one", () => {
    // (the file without the test's own definition: guardFiles passes it so)
    const without = (name: string) => TESTS.replace(new RegExp(`    def ${name}\\(self\\):\\n.*\\n`), "");
    expect(namedElsewhere(without("test_simple"), "test_simple", "TestFD")).toMatch(/another test calls it/);
    expect(namedElsewhere(without("test_nulled"), "test_nulled", "TestStd")).toMatch(/inherits its class/);
    expect(namedElsewhere(without("test_simple_many"), "test_simple_many", "TestFD")).toBeUndefined();
    expect(
      namedElsewhere(TESTS.replace(/def test_alone\(\):\n.*\n/, ""), "test_alone", undefined),
    ).toBeUndefined();
    expect(namedElsewhere("class TestStdX(object):\n    pass\n", "t", "TestStd")).toBeUndefined();
  });
});

const noPython = skipWithoutHostPython("the kept-names pytest run");
const hasPytest =
  !noPython && (await execa("python3", ["-c", "import pytest"], { reject: false })).exitCode === 0;
if (!noPython && !hasPytest)
  console.log(
    "skipped the kept-names pytest run: the host's python3 has no pytest (scripts/ensure-system-deps)",
  );

describe.skipIf(noPython || !hasPytest)(
  "decoys beside tests that call or inherit tests (a real pytest run)",
  () => {
    it("gold passes every graded id; the called and inherited tests keep their names, the others are guarded", async () => {
      await using tmp = await tempDir("flakegym-kept-names-");
      const g = guardFiles("pytest", [{ path: FILE, content: Buffer.from(TESTS) }], IDS, rand);
      const why = Object.fromEntries(g.report.unguarded.map((u) => [u.id, u.reason]));
      expect(why[IDS[0]!]).toMatch(/another test calls it/);
      expect(why[IDS[2]!]).toMatch(/inherits its class/);
      expect(g.report.guarded).toContain(IDS[4]);
      await mkdir(join(tmp.path, "tests"), { recursive: true });
      await writeFile(join(tmp.path, "cap.py"), "def snap(s):\n    return str(s)\n");
      await writeFile(join(tmp.path, FILE), g.files[0]!.content);
      const p = await execa("python3", ["-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests"], {
        cwd: tmp.path,
        env: { PYTHONPATH: tmp.path },
        reject: false,
        timeout: 120_000,
      });
      const passed = new Set([...p.stdout.matchAll(/^PASSED (\S+)/gm)].map((m) => m[1]!));
      for (const id of IDS) expect(passed.has(g.plan.runIds[id] ?? id), id).toBe(true);
    }, 120_000);
  },
);

describe.skipIf(noPython || !hasPytest)(
  "a spaced parameter graded by its first word (SWE-bench's key)",
  () => {
    it("maps `t[int` to the renamed block when a sibling case is twinned: gold's cases are all reported", async () => {
      await using tmp = await tempDir("flakegym-open-case-");
      const file = "tests/test_types.py";
      const text = `import pytest


@pytest.mark.parametrize("t", ["int or str", "dict(str,str)"])
def test_types(t):
    assert len(t) > 3
    assert t.strip() == t
`;
      // pylint-4551's keys: `[int or str]` is graded by its first word, `[dict(str,str)]` whole
      const ids = [`${file}::test_types[int`, `${file}::test_types[dict(str,str)]`];
      const g = guardFiles("pytest", [{ path: file, content: Buffer.from(text) }], ids, rand);
      expect(g.plan.runIds[ids[0]!]).toMatch(/^tests\/test_types\.py::test_[0-9a-f]{10}\[int$/);
      expect(g.plan.runIds[ids[0]!]!.split("[")[0]).toBe(g.plan.runIds[ids[1]!]!.split("[")[0]);
      await mkdir(join(tmp.path, "tests"), { recursive: true });
      await writeFile(join(tmp.path, file), g.files[0]!.content);
      const p = await execa("python3", ["-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests"], {
        cwd: tmp.path,
        reject: false,
        timeout: 120_000,
      });
      const passed = new Set([...p.stdout.matchAll(/^PASSED (\S+)/gm)].map((m) => m[1]!));
      for (const id of ids) expect(passed.has(g.plan.runIds[id]!), id).toBe(true);
    }, 120_000);
  },
);
