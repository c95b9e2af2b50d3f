import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { guardHidden } from "../../../src/scoring/decoys/guard-hidden.js";
import { goldOutsideRunTests } from "../../../src/scoring/externalize/run.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { emittedStep, type ParsedScoring } from "../../../src/scoring/script.js";
import { filesOf, pytestUnavailable, runGuardedPytest, seededDraw } from "../../helpers/guarded-pytest.js";
import { parsedScoring } from "../../helpers/parsed-scoring.js";
import { tempDir } from "../../helpers/temp-dir.js";

// Issue 41 on a small real pytest file of pylint-4661's shape (tests/test_pylint_runners.py): the
// test runs the code under test on its own file (`__file__`) and asserts the exit code. Rewritten,
// the file holds the emitter, so gold's value is another (pylint: 30, not 0): the test passed in
// the sandbox and failed on the host. validate's probe of gold now records such tests (as opaque
// ones are): later scorings leave that whole file as written (its tests reported unguarded).

const TESTS = `from lint import lint


def test_self_clean():
    code = lint(__file__)
    assert code == 0


def test_other():
    assert lint(None) == 2
`;
// "lints" a file: 0 when it defines nothing but tests, imports and assignments; None: 2
const GOLD = `import ast


def lint(path):
    if path is None:
        return 2
    tree = ast.parse(open(path).read())
    ok = (ast.Import, ast.ImportFrom, ast.Assign)
    return 0 if all(isinstance(n, ok) or getattr(n, "name", "").startswith("test") for n in tree.body) else 30
`;
const WRONG = GOLD.replace("return 2", "return 3")
  .replace("else 30", "else 0")
  .replace("return 0 if", "return 1 if");
const FILE = "tests/test_self.py";
const SELF = `${FILE}::test_self_clean`;
const OTHER = `${FILE}::test_other`;
const suite = { results: "pytest" as const, failToPass: [SELF], passToPass: [OTHER] };

const rand = seededDraw(5);
const parsedOf = (output: string): ParsedScoring =>
  parsedScoring({ [emittedStep(0, 0)]: { exitCode: 0, outputBytes: output.length, seconds: 0, output } });

const unavailable = await pytestUnavailable("the self-reading pytest runs");

describe.skipIf(unavailable)("a test that reads its own file (gold's probe records it)", () => {
  it("gold fails on the host unrecorded; the probe picks it; recorded, gold passes as written and a wrong one fails", async () => {
    await using tmp = await tempDir("flakegym-gold-outside-");
    const installed = [{ path: FILE, content: Buffer.from(TESTS), executable: false }];
    const verdictOf = async (name: string, opaque: Record<string, string> | undefined, impl: string) => {
      const g = await guardHidden({ ...suite, ...(opaque ? { opaque } : {}) }, installed, tmp.path, rand);
      const r = await runGuardedPytest(join(tmp.path, name), { "lint.py": impl, ...filesOf(g.files) });
      const { passed } = r;
      const emitted = r.emitted ?? "";
      const runId = (id: string) => g.plan.runIds[id] ?? id;
      const outside = externalVerdict([SELF, OTHER].map(runId), g.external, emitted);
      const pass = (id: string) => passed.has(runId(id)) && !outside.has(runId(id));
      return { g, passed, emitted, runId, self: pass(SELF), other: pass(OTHER) };
    };

    const bare = await verdictOf("bare", undefined, GOLD);
    expect(bare.g.report.externalized).toEqual([SELF, OTHER]);
    expect(bare.passed.has(SELF)).toBe(true);
    expect([bare.self, bare.other]).toEqual([false, true]);
    const gold = new Map([SELF, OTHER].filter((id) => bare.passed.has(id)).map((id) => [id, bare.runId(id)]));
    const picked = goldOutsideRunTests(parsedOf(bare.emitted), 0, gold, bare.g.external);
    expect(Object.keys(picked)).toEqual([SELF]);
    expect(picked[SELF]).toMatch(/host comparison failed though the rewritten test passed/);

    const recorded = await verdictOf("recorded", picked, GOLD);
    // its whole file stays as written (another test's emitter or a decoy would change what it reads)
    expect(recorded.g.report.externalized).toEqual([]);
    expect(recorded.g.report.unguarded.map((u) => u.id).sort()).toEqual([OTHER, SELF]);
    expect(recorded.g.report.unguarded[0]!.reason).toMatch(/stays as written/);
    expect(recorded.g.files.map((f) => f.content.toString())).toEqual([TESTS]);
    expect([recorded.self, recorded.other]).toEqual([true, true]);
    const wrong = await verdictOf("wrong", picked, WRONG);
    expect([wrong.self, wrong.other]).toEqual([false, false]);
  }, 120_000);

  it("an emission stream that cannot be believed picks nothing", () => {
    const site = {
      site: "aaaaaaaaaaaaaaaa",
      test: SELF,
      kind: "eq" as const,
      expected: { t: "int" as const, v: "0" },
      opts: {},
      count: "one" as const,
      pair: false,
    };
    const passed = new Map([[SELF, SELF]]);
    const wrongValue = `${JSON.stringify({ s: site.site, n: SELF, v: { t: "int", v: "30" } })}\n`;
    expect(Object.keys(goldOutsideRunTests(parsedOf(wrongValue), 0, passed, [site]))).toEqual([SELF]);
    expect(goldOutsideRunTests(parsedOf(`${wrongValue}not json\n`), 0, passed, [site])).toEqual({});
    expect(goldOutsideRunTests(parsedOf(wrongValue), 0, new Map(), [site])).toEqual({});
  });
});
