import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { probesDecoys } from "../../../src/rollout/scoring-attempt.js";
import { guardFiles, INERT_REASON } from "../../../src/scoring/decoys/guard.js";
import { recordDecoyInert, withDecoyInert } from "../../../src/scoring/decoys/inert-record.js";
import { inertCount, siteKey } from "../../../src/scoring/decoys/site-key.js";
import { decoyInertSites, decoyVerdict, type TestOutcome } from "../../../src/scoring/results.js";

// Issue 41: decoys only where they discriminate. A decoy's site is keyed by the literal it changes
// (line:column from the test's def line), the same in every draw; validate's probe of gold finds the
// sites gold passes a changed value at, per case; recorded, no draw puts a decoy there.

const FILE = "tests/test_b.py";
const TESTS = `import pytest
from b import f


@pytest.mark.parametrize("x", (0, 1, 2))
def test_branch(x):
    if x:
        assert f(x) == "one"
    assert f(-1) == "none"


def test_plain():
    assert f(5) == "five"
`;
const cases = ["0", "1", "2"].map((x) => `${FILE}::test_branch[${x}]`);
const PLAIN = `${FILE}::test_plain`;
const files = [{ path: FILE, content: Buffer.from(TESTS) }];
const lines = TESTS.split("\n");
const keyOf = (needle: string, def: string) => {
  const at = lines.findIndex((l) => l.includes(needle));
  const d = lines.findIndex((l) => l.startsWith(def));
  return `${at - d + 1}:${lines[at]!.indexOf(needle) + 1}`;
};
// `"one"` runs only for x != 0; `"none"` runs for every case
const ONE = keyOf('"one"', "def test_branch");
const NONE = keyOf('"none"', "def test_branch");

const seeded = (start: number) => {
  let s = start;
  return (n: number) => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return (s >>> 16) % n;
  };
};

describe("siteKey", () => {
  it("names a literal by line and column from the test's def line, whatever precedes the test", () => {
    const text = `x = 1\n\ndef test_a():\n    assert a() == 3\n`;
    const name = text.indexOf("test_a");
    expect(siteKey(text, name, { start: text.indexOf("3"), end: text.indexOf("3") + 1 })).toBe("2:19");
    const shifted = `import os\n\n\n${text}`;
    const n2 = shifted.indexOf("test_a");
    expect(siteKey(shifted, n2, { start: shifted.indexOf("3\n"), end: shifted.indexOf("3\n") + 1 })).toBe(
      "2:19",
    );
  });

  it("counts a site inert for the cases that recorded it", () => {
    expect(inertCount({ a: ["1:2"], b: ["1:2", "3:4"] }, ["a", "b", "c"], "1:2")).toBe(2);
    expect(inertCount(undefined, ["a"], "1:2")).toBe(0);
  });
});

describe("guardFiles: the probe and the record", () => {
  it("the probe puts one decoy at every site, each with its site, every case of it registered", () => {
    const g = guardFiles("pytest", files, [...cases, PLAIN], seeded(3), [], { probe: true });
    expect(g.plan.probe).toBe(true);
    const sitesOf = (id: string) =>
      Object.entries(g.plan.decoys)
        .filter(([, of]) => of === id)
        .map(([d]) => g.plan.sites![d])
        .sort();
    for (const c of cases) expect(sitesOf(c)).toEqual([NONE, ONE].sort());
    expect(sitesOf(PLAIN)).toEqual([keyOf('"five"', "def test_plain")]);
  });

  it("never draws a site recorded inert for a case when another site is live for every case", () => {
    const inert = { [cases[0]!]: [ONE] };
    for (const s of [1, 2, 3, 4, 5, 6, 7, 8]) {
      const g = guardFiles("pytest", files, [...cases, PLAIN], seeded(s), [], { inert });
      expect(g.plan.probe).toBeUndefined();
      const drawn = new Set(
        Object.entries(g.plan.decoys)
          .filter(([, of]) => cases.includes(of))
          .map(([d]) => d),
      );
      expect(drawn.size).toBe(3 * 3);
      const text = g.files[0]!.content.toString();
      // every decoy changed "none", none changed "one"
      expect(text.split('== "one"').length - 1).toBe(4);
      expect(g.report.guarded).toEqual([...cases, PLAIN]);
    }
  });

  it("a case whose every site is inert gets no decoys (unguarded, said why); its sibling cases keep theirs", () => {
    const inert = { [cases[0]!]: [ONE, NONE] };
    const g = guardFiles("pytest", files, [...cases, PLAIN], seeded(5), [], { inert });
    expect(g.report.unguarded).toEqual([{ id: cases[0], reason: INERT_REASON }]);
    expect(g.report.guarded).toEqual([cases[1], cases[2], PLAIN]);
    expect(Object.values(g.plan.decoys).filter((of) => of === cases[0])).toEqual([]);
    expect(Object.values(g.plan.decoys).filter((of) => of === cases[1])).toHaveLength(3);
  });

  it("a test whose every site is inert for every case has no decoy copies at all", () => {
    const inert = Object.fromEntries(cases.map((c) => [c, [ONE, NONE]]));
    const g = guardFiles("pytest", files, cases, seeded(5), [], { inert });
    expect(g.report.guarded).toEqual([]);
    expect(g.report.unguarded.map((u) => u.reason)).toEqual([INERT_REASON, INERT_REASON, INERT_REASON]);
    expect(g.files[0]!.content.toString().split("def test_").length - 1).toBe(2);
  });

  it("a record names sites, not draws: the same record holds over fresh draws of names and values", () => {
    const a = guardFiles("pytest", files, cases, seeded(11), [], { probe: true });
    const b = guardFiles("pytest", files, cases, seeded(12), [], { probe: true });
    expect(Object.keys(a.plan.decoys)).not.toEqual(Object.keys(b.plan.decoys));
    expect(new Set(Object.values(a.plan.sites!))).toEqual(new Set(Object.values(b.plan.sites!)));
  });
});

describe("decoyInertSites and decoyVerdict under the probe", () => {
  const g = guardFiles("pytest", files, cases, seeded(3), [], { probe: true });
  const real = (c: string) => g.plan.runIds[c]!;
  /** gold's run: every real case passes; the "one" decoys of case 0 pass (that branch never runs). */
  const gold = new Map<string, TestOutcome>();
  for (const c of cases) gold.set(real(c), "passed");
  for (const [d, of] of Object.entries(g.plan.decoys))
    gold.set(d, of === cases[0] && g.plan.sites![d] === ONE ? "passed" : "failed");

  it("reads the probe's passing decoys as inert sites of their case, not as a forged run", () => {
    expect(decoyInertSites(gold, g.plan)).toEqual({ [cases[0]!]: [ONE] });
    expect(decoyVerdict(gold, g.plan).ok).toBe(true);
  });

  it("outside the probe the same results are a forged run, and no site is read as inert", () => {
    const { probe: _p, sites: _s, ...plain } = g.plan;
    expect(decoyVerdict(gold, plain).ok).toBe(false);
    expect(decoyInertSites(gold, plain)).toEqual({});
  });

  it("a probe decoy that did not report while its twin passed is still steering", () => {
    const silent = new Map(gold);
    silent.delete(Object.keys(g.plan.decoys)[0]!);
    expect(decoyVerdict(silent, g.plan)).toMatchObject({
      ok: false,
      reason: expect.stringMatching(/did not report/),
    });
  });
});

describe("only validate's gold run probes", () => {
  it("probes gold with decoyProbe set; never another policy, never without it", () => {
    expect(probesDecoys({ decoyProbe: true }, "gold")).toBe(true);
    expect(probesDecoys({ decoyProbe: true }, "empty")).toBe(false);
    expect(probesDecoys({ decoyProbe: true }, "scripted:cheats/x.json")).toBe(false);
    expect(probesDecoys({}, "gold")).toBe(false);
  });
});

describe("the record in task.json", () => {
  const spec = {
    id: "t",
    tests: { run: { kind: "suite", failToPass: [cases[1]], passToPass: [cases[0], PLAIN] } },
  };

  it("merges sites per graded id, sorted and unique, counting only new ones", () => {
    const once = withDecoyInert(spec, { [cases[0]!]: [ONE] });
    expect(once).toMatchObject({ added: 1 });
    const twice = withDecoyInert((once as { spec: unknown }).spec, { [cases[0]!]: [ONE, NONE] });
    expect(twice).toMatchObject({ added: 1 });
    const run = (twice as { spec: { tests: { run: { decoyInert: unknown } } } }).spec.tests.run;
    expect(run.decoyInert).toEqual({ [cases[0]!]: [NONE, ONE].sort() });
  });

  it("refuses an id that is not graded, a malformed site, a task that is not a suite: each named", () => {
    expect(withDecoyInert(spec, { "tests/x.py::nope": ["1:1"] })).toEqual({
      error: "tests/x.py::nope is no graded test of the task",
    });
    expect(withDecoyInert(spec, { [cases[0]!]: ["one"] })).toMatchObject({
      error: expect.stringMatching(/line:column/),
    });
    expect(withDecoyInert({ tests: { run: { kind: "commands" } } }, {})).toMatchObject({
      error: expect.stringMatching(/not a suite/),
    });
  });

  it("writes task.json whole and leaves it as it was when nothing is new", async () => {
    const dir = await mkdtemp(join(tmpdir(), "flakegym-inert-record-"));
    try {
      await writeFile(join(dir, "task.json"), JSON.stringify(spec));
      expect(await recordDecoyInert(dir, { [cases[0]!]: [ONE] })).toBe(1);
      const after = await readFile(join(dir, "task.json"), "utf8");
      expect(JSON.parse(after).tests.run.decoyInert).toEqual({ [cases[0]!]: [ONE] });
      expect(await recordDecoyInert(dir, { [cases[0]!]: [ONE] })).toBe(0);
      expect(await readFile(join(dir, "task.json"), "utf8")).toBe(after);
      await expect(recordDecoyInert(join(dir, "missing"), { a: ["1:1"] })).rejects.toThrow(/task\.json/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
