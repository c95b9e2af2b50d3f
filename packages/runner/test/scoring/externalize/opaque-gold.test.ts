import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { guardHidden } from "../../../src/scoring/decoys/guard-hidden.js";
import { opaqueTestsOf } from "../../../src/scoring/externalize/opaque.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { filesOf, pytestUnavailable, runGuardedPytest, seededDraw } from "../../helpers/guarded-pytest.js";
import { tempDir } from "../../helpers/temp-dir.js";

// Issues 41/42 on a small real pytest file: requests' `assert "spam" in cid` on a case-insensitive
// dict. The sandbox renders the dict as an opaque object, so the host cannot compare the literal:
// gold fails closed. Recorded from gold's emissions, the test is left to decoys: gold passes, a
// wrong implementation still fails, and the other test of the file stays externalized.

const TESTS = `from cid import CIDict, make


def test_contains_any_case():
    d = make()
    assert "spam" in d
    assert d == {"SPAM": 1}


def test_size():
    assert len(make()) == 1
`;
const GOLD = `class CIDict:
    def __init__(self, data):
        self._d = {k.lower(): (k, v) for k, v in data.items()}

    def __contains__(self, key):
        return key.lower() in self._d

    def __eq__(self, other):
        return {k: v for k, (_, v) in self._d.items()} == {k.lower(): v for k, v in dict(other).items()}

    def __len__(self):
        return len(self._d)

    def __iter__(self):
        return (k for k, _ in self._d.values())

    def __getitem__(self, key):
        return self._d[key.lower()][1]

    def __repr__(self):
        return repr({k: v for k, v in self._d.values()})


def make():
    return CIDict({"Spam": 1})
`;
// case-sensitive: "spam" is not in it, and it does not equal {"SPAM": 1}
const WRONG = GOLD.replace(
  "return key.lower() in self._d",
  "return key in {k for k, _ in self._d.values()}",
).replace("k.lower(): v for k, v in dict(other)", "k: v for k, v in dict(other)");
const FILE = "tests/test_cid.py";
const CID = `${FILE}::test_contains_any_case`;
const SIZE = `${FILE}::test_size`;
const suite = { results: "pytest" as const, failToPass: [CID], passToPass: [SIZE] };

// a seeded draw (decoy values and names vary per seed; every assertion below holds for any)
const rand = seededDraw(7);
const unavailable = await pytestUnavailable("the opaque-object pytest runs");

/** Runs the guarded files under pytest over `impl`: pytest's PASSED ids and the emissions. */
const run = (dir: string, files: readonly { path: string; content: Uint8Array }[], impl: string) =>
  runGuardedPytest(dir, { "cid.py": impl, ...filesOf(files) });

describe.skipIf(unavailable)("a test whose gold value is opaque (recorded at validation)", () => {
  it("fails gold closed without the record; with it, gold passes under a decoy and a wrong implementation fails", async () => {
    await using tmp = await tempDir("flakegym-opaque-");
    const installed = [{ path: FILE, content: Buffer.from(TESTS), executable: false }];
    const verdictOf = async (name: string, opaque: Record<string, string> | undefined, impl: string) => {
      const g = await guardHidden({ ...suite, ...(opaque ? { opaque } : {}) }, installed, tmp.path, rand);
      const r = await run(join(tmp.path, name), g.files, impl);
      const outside = externalVerdict([CID, SIZE], g.external, r.emitted);
      const pass = (id: string) => r.passed.has(g.plan.runIds[id] ?? id) && !outside.has(id);
      return { g, r, outside, cid: pass(CID), size: pass(SIZE) };
    };

    // without the record: both tests externalized; gold's dict is opaque at the literal site
    const bare = await verdictOf("bare", undefined, GOLD);
    expect(bare.g.report.externalized).toEqual([CID, SIZE]);
    expect(bare.outside.get(CID)).toMatch(/did not hold for the emitted obj/);
    expect([bare.cid, bare.size]).toEqual([false, true]);
    const picked = opaqueTestsOf([CID, SIZE], bare.g.external, bare.r.emitted);
    expect(picked).toEqual({ [CID]: "cid.CIDict" });

    // with the record picked from gold: that test stays as written, under a decoy
    const gold = await verdictOf("gold", picked, GOLD);
    expect(gold.g.report.externalized).toEqual([SIZE]);
    expect(gold.g.report.guarded).toEqual([CID]);
    expect(gold.g.files[0]!.content.toString()).toContain('"spam" in d');
    expect(gold.g.files[0]!.content.toString()).not.toContain("== 1\n");
    expect([gold.cid, gold.size]).toEqual([true, true]);
    // its decoy failed, as a decoy must (the twin id is what pytest did not pass)
    const decoys = Object.keys(gold.g.plan.decoys);
    expect(decoys.length).toBeGreaterThan(0);
    for (const d of decoys) expect(gold.r.passed.has(d)).toBe(false);

    const wrong = await verdictOf("wrong", picked, WRONG);
    expect([wrong.cid, wrong.size]).toEqual([false, true]);
  }, 120_000);

  it("an opaque test that is a method of a unittest class is left to decoys too: sibling methods, gold passes, a wrong one fails", async () => {
    await using tmp = await tempDir("flakegym-opaque-");
    // the same tests as methods of a unittest.TestCase, as requests-2317's recorded ones are
    const asClass = TESTS.replace(
      "\n\ndef test_contains_any_case():",
      "\nimport unittest\n\n\nclass TestCID(unittest.TestCase):\n    def test_contains_any_case(self):",
    )
      .replace(
        '    d = make()\n    assert "spam" in d\n    assert d == {"SPAM": 1}',
        '        d = make()\n        assert "spam" in d\n        assert d == {"SPAM": 1}',
      )
      .replace("\n\ndef test_size():\n    assert", "\n    def test_size(self):\n        assert");
    const cid = `${FILE}::TestCID::test_contains_any_case`;
    const size = `${FILE}::TestCID::test_size`;
    const installed = [{ path: FILE, content: Buffer.from(asClass), executable: false }];
    const classSuite = {
      results: "pytest" as const,
      failToPass: [cid],
      passToPass: [size],
      opaque: { [cid]: "cid.CIDict" },
    };
    const verdictOf = async (name: string, impl: string) => {
      const g = await guardHidden(classSuite, installed, tmp.path, rand);
      const r = await run(join(tmp.path, name), g.files, impl);
      const outside = externalVerdict([cid, size], g.external, r.emitted);
      const pass = (id: string) => r.passed.has(g.plan.runIds[id] ?? id) && !outside.has(id);
      return { g, r, cid: pass(cid), size: pass(size) };
    };
    const gold = await verdictOf("gold", GOLD);
    expect(gold.g.report.guarded).toEqual([cid]);
    expect(gold.g.report.externalized).toEqual([size]);
    expect(gold.g.plan.runIds[cid]).toMatch(/::TestCID::test_[0-9a-f]{10}$/);
    const decoys = Object.keys(gold.g.plan.decoys);
    expect(decoys.length).toBeGreaterThan(0);
    for (const d of decoys) {
      expect(d).toMatch(/::TestCID::test_[0-9a-f]{10}$/);
      expect(gold.r.passed.has(d)).toBe(false);
    }
    expect([gold.cid, gold.size]).toEqual([true, true]);
    const wrong = await verdictOf("wrong", WRONG);
    expect([wrong.cid, wrong.size]).toEqual([false, true]);
  }, 120_000);

  it("a record for another test does not spare an opaque one: it still fails closed", async () => {
    await using tmp = await tempDir("flakegym-opaque-");
    const installed = [{ path: FILE, content: Buffer.from(TESTS), executable: false }];
    const g = await guardHidden({ ...suite, opaque: { [SIZE]: "x" } }, installed, tmp.path, rand);
    expect(g.report.externalized).toEqual([CID]);
    const r = await run(tmp.path, g.files, GOLD);
    expect(externalVerdict([CID, SIZE], g.external, r.emitted).get(CID)).toMatch(/emitted obj/);
  }, 60_000);
});
