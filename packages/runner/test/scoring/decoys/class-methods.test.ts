import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { testBlocks } from "../../../src/scoring/decoys/blocks.js";
import { DECOYS_PER_TEST, guardFiles, pytestIdParts } from "../../../src/scoring/decoys/guard.js";
import { idsTwinFiles } from "../../../src/scoring/decoys/twin.js";
import type { TestOutcome } from "../../../src/scoring/results.js";
import { decoysPassedAlone, decoyVerdict } from "../../../src/scoring/results.js";
import { skipWithoutHostPython } from "../../helpers/host-python.js";
import { tempDir } from "../../helpers/temp-dir.js";

// Issues 41/42: graded tests that are methods of test classes (a plain pytest class and a
// unittest.TestCase, as requests' recorded opaque tests are) get decoys: sibling methods of the
// same class, under fresh names, ids `file::Class::method[params]`.

const FILE = "tests/test_k.py";
const TESTS = `import unittest

import pytest

from k import shout, whisper


class TestX:
    @pytest.mark.parametrize(
        "n", (
            1,
            2,
        ))
    def test_upper(self, tmp_path, n):
        (tmp_path / "f").write_text("x")
        assert shout("hey") == "HEY!"

    def helper(self):
        def test_inner():
            pass
        return test_inner


class T(unittest.TestCase):
    def setUp(self):
        self.w = whisper

    def test_lower(self):
        assert self.w("HEY") == "hey"


def test_top():
    assert shout("a") == "A!"
`;
const UPPER = [`${FILE}::TestX::test_upper[1]`, `${FILE}::TestX::test_upper[2]`];
const LOWER = `${FILE}::T::test_lower`;
const GOLD = `def shout(s):\n    return s.upper() + "!"\n\n\ndef whisper(s):\n    return s.lower()\n`;
const WRONG = `def shout(s):\n    return s\n\n\ndef whisper(s):\n    return s\n`;

const seeded = (start: number) => {
  let s = start;
  return (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 16) % n;
  };
};
const guard = (seed: number) =>
  guardFiles("pytest", [{ path: FILE, content: Buffer.from(TESTS) }], [...UPPER, LOWER], seeded(seed));

/** The test methods of class `cls` in `text`, in source order. */
const methodsOf = (text: string, cls: string) =>
  testBlocks("pytest", text)
    .blocks.filter((b) => b.scope === cls)
    .map((b) => b.name);

describe("class methods: blocks and ids", () => {
  it("finds test methods of top-level classes (scope set), not helpers or functions nested in them", () => {
    const blocks = testBlocks("pytest", TESTS).blocks;
    expect(blocks.map((b) => [b.scope, b.name])).toEqual([
      ["TestX", "test_upper"],
      ["T", "test_lower"],
      [undefined, "test_top"],
    ]);
    // a method's whole definition starts at its decorator and ends before the next method
    const upper = blocks[0]!;
    expect(TESTS.slice(upper.whole.start, upper.whole.end)).toMatch(
      /^ {4}@pytest\.mark\.parametrize[\s\S]*== "HEY!"\n$/,
    );
  });

  it("parses file::name, file::Class::name and a case's [params]; a nested class is not handled", () => {
    const p = pytestIdParts("t.py::C::test_a[x::y-1]")!;
    expect([p.file, p.scope, p.name, p.params]).toEqual(["t.py", "C", "test_a", "[x::y-1]"]);
    expect(p.run("test_b")).toBe("t.py::C::test_b[x::y-1]");
    expect(pytestIdParts("t.py::test_a")!.run("test_b")).toBe("t.py::test_b");
    expect(pytestIdParts("t.py::A::B::test_a")).toBeUndefined();
    expect(pytestIdParts("t.py::test_a[x")).toBeUndefined();
  });
});

describe("class methods: guardFiles", () => {
  it("twins each graded method as sibling methods of its class and maps the real id", () => {
    const g = guard(3);
    const out = g.files[0]!.content.toString();
    expect(g.report).toEqual({ guarded: [...UPPER, LOWER], unguarded: [] });
    expect(out).not.toContain("def test_upper(");
    expect(out).not.toContain("def test_lower(");
    for (const [cls, id] of [
      ["TestX", UPPER[0]!],
      ["T", LOWER],
    ] as const) {
      const copies = methodsOf(out, cls);
      expect(copies).toHaveLength(1 + DECOYS_PER_TEST);
      const real = g.plan.runIds[id]!;
      expect(real).toMatch(new RegExp(`^tests/test_k\\.py::${cls}::test_[0-9a-f]{10}(\\[1\\])?$`));
      expect(copies).toContain(pytestIdParts(real)!.name);
      // every other copy is a decoy of this id, a sibling in the same class
      const mine = Object.entries(g.plan.decoys).filter(([, of]) => of === id);
      expect(mine.map(([d]) => pytestIdParts(d)!.name).sort()).toEqual(
        copies.filter((c) => c !== pytestIdParts(real)!.name).sort(),
      );
    }
    // each parametrized case has its own case of every decoy
    expect(Object.values(g.plan.decoys).filter((of) => of === UPPER[1])).toHaveLength(DECOYS_PER_TEST);
    expect(Object.keys(g.plan.decoys).filter((d) => d.endsWith("[2]"))).toHaveLength(DECOYS_PER_TEST);
    // same decorators (a multi-line one whole) and fixtures on every copy; the function at top level is untouched
    const decorated =
      / {4}@pytest\.mark\.parametrize\(\n {8}"n", \(\n {12}1,\n {12}2,\n {8}\)\)\n {4}def test_\w+\(self, tmp_path, n\):/g;
    expect(out.match(decorated)).toHaveLength(1 + DECOYS_PER_TEST);
    expect(out.match(/ {4}def test_\w+\(self\):\n {8}assert self\.w\("HEY"\) == "\w*"/g)).toHaveLength(
      1 + DECOYS_PER_TEST,
    );
    expect(out).toContain('def test_top():\n    assert shout("a") == "A!"');
  });

  it("the ids-kind twin counts a method guarded only through its own class", () => {
    const files = [{ path: FILE, content: Buffer.from(TESTS) }];
    const r = idsTwinFiles(files, [LOWER, `${FILE}::Other::test_lower`], seeded(5)).report;
    expect(r.guarded).toEqual([LOWER]);
    expect(r.unguarded.map((u) => u.id)).toEqual([`${FILE}::Other::test_lower`]);
  });

  it("a forger that reads the copies' names cannot pick the real one: each rule lands on a decoy about 3 times in 4, and is flagged", () => {
    // rules a forger reading the guarded file might use to pass one copy per class
    const rules: Record<string, (names: string[]) => string> = {
      first: (n) => n[0]!,
      last: (n) => n[n.length - 1]!,
      smallest: (n) => [...n].sort()[0]!,
      largest: (n) => [...n].sort().reverse()[0]!,
    };
    const runs = 200;
    for (const [rule, pick] of Object.entries(rules)) {
      let wins = 0;
      for (let seed = 1; seed <= runs; seed++) {
        const g = guard(seed);
        const out = g.files[0]!.content.toString();
        const chosen = pick(methodsOf(out, "T"));
        // honest results are all failures (a wrong solution); the forger passes its chosen copy
        const results = new Map<string, TestOutcome>(
          [g.plan.runIds[LOWER]!, ...Object.keys(g.plan.decoys)].map((id) => [
            id,
            id === `${FILE}::T::${chosen}` ? "passed" : "failed",
          ]),
        );
        const flagged = !decoyVerdict(results, g.plan).ok || decoysPassedAlone(results, g.plan).length > 0;
        if (results.get(g.plan.runIds[LOWER]!) === "passed") wins++;
        else expect(flagged, `${rule}, seed ${seed}`).toBe(true);
      }
      // the real copy is 1 of 4 at random: about 50 of 200 wins, never most
      expect(wins, rule).toBeGreaterThan(runs / 4 - 30);
      expect(wins, rule).toBeLessThan(runs / 4 + 30);
    }
  });
});

const noPython = skipWithoutHostPython("the class-method decoy pytest runs");
const hasPytest =
  !noPython && (await execa("python3", ["-c", "import pytest"], { reject: false })).exitCode === 0;
if (!noPython && !hasPytest)
  console.log(
    "skipped the class-method decoy pytest runs: the host's python3 has no pytest (scripts/ensure-system-deps)",
  );

// a conftest that reports every test passed: it cannot tell the real copy, so it passes the decoys
const FORGE = `import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.when == "call":
        rep.outcome = "passed"
        rep.longrepr = None
`;

async function pytestRun(dir: string, content: Buffer, impl: string, conftest?: string) {
  await mkdir(join(dir, "tests"), { recursive: true });
  await writeFile(join(dir, "k.py"), impl);
  await writeFile(join(dir, FILE), content);
  if (conftest) await writeFile(join(dir, "tests", "conftest.py"), conftest);
  const p = await execa("python3", ["-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests"], {
    cwd: dir,
    env: { PYTHONPATH: dir },
    reject: false,
    timeout: 60_000,
  });
  const results = new Map<string, TestOutcome>();
  for (const m of p.stdout.matchAll(/^(PASSED|FAILED) (\S+)/gm))
    results.set(m[2]!, m[1] === "PASSED" ? "passed" : "failed");
  return results;
}

describe.skipIf(noPython || !hasPytest)("class methods under real pytest", () => {
  it("gold passes every real copy and fails every decoy; a forged all-pass is refused", async () => {
    await using tmp = await tempDir("flakegym-class-decoys-");
    const g = guard(11);
    const gold = await pytestRun(join(tmp.path, "gold"), g.files[0]!.content, GOLD);
    for (const id of [...UPPER, LOWER]) expect(gold.get(g.plan.runIds[id]!), id).toBe("passed");
    for (const d of Object.keys(g.plan.decoys)) expect(gold.get(d), d).toBe("failed");
    expect(decoyVerdict(gold, g.plan)).toEqual({ ok: true });

    const forged = await pytestRun(join(tmp.path, "forged"), g.files[0]!.content, WRONG, FORGE);
    expect(forged.get(g.plan.runIds[LOWER]!)).toBe("passed");
    expect(decoyVerdict(forged, g.plan)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/passed beside it/),
    });
  }, 120_000);
});
