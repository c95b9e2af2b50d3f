import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { guardHidden } from "../../../src/scoring/decoys/guard-hidden.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { filesOf, pytestUnavailable, runGuardedPytest, seededDraw } from "../../helpers/guarded-pytest.js";
import { tempDir } from "../../helpers/temp-dir.js";

// Issue 41 on a small real pytest file of pytest-7521's shapes (testing/test_capture.py): a test
// class inherits another's test method (pytest runs it under the subclass's node), and a test calls
// another test of its class ten times. Their emissions came under a node other than the site's
// test, and the host called the whole stream unbelievable: every externalized test of the run
// failed, gold's included (94 of 128). Now each such run is that test's, held to the same value.

const TESTS = `from buf import wrap


class TestBase:
    def make(self):
        return wrap("foo\\r\\n")

    def test_buf(self):
        assert self.make() == "foo\\r\\n"


class TestTee(TestBase):
    def test_tee(self):
        assert len(self.make()) == 5


class TestMany:
    def test_one(self):
        assert wrap("hello") == "hello"

    def test_many(self):
        for _ in range(10):
            self.test_one()
`;
const GOLD = "def wrap(s):\n    return str(s)\n";
// translates newlines: every assertion above fails on it
const WRONG = 'def wrap(s):\n    return s.replace("\\r\\n", "\\n").replace("o", "0")\n';
const FILE = "tests/test_buf.py";
const IDS = [
  "TestBase::test_buf",
  "TestTee::test_buf",
  "TestTee::test_tee",
  "TestMany::test_one",
  "TestMany::test_many",
].map((t) => `${FILE}::${t}`);
const suite = { results: "pytest" as const, failToPass: IDS.slice(0, 2), passToPass: IDS.slice(2) };

const rand = seededDraw(11);
const unavailable = await pytestUnavailable("the borrowed-run pytest runs");

describe.skipIf(unavailable)("a test body another test of its file runs (inherited, called)", () => {
  it("gold passes every test outside the sandbox; a wrong implementation fails each, inherited and called runs included", async () => {
    await using tmp = await tempDir("flakegym-borrowed-");
    const installed = [{ path: FILE, content: Buffer.from(TESTS), executable: false }];
    const g = await guardHidden(suite, installed, tmp.path, rand);
    expect(g.report.externalized).toEqual(expect.arrayContaining([IDS[0], IDS[3]]));
    const verdictOf = async (name: string, impl: string) => {
      const { passed, emitted } = await runGuardedPytest(join(tmp.path, name), {
        "buf.py": impl,
        ...filesOf(g.files),
      });
      const runIds = IDS.map((id) => g.plan.runIds[id] ?? id);
      return { passed, outside: externalVerdict(runIds, g.external, emitted), runIds };
    };

    const gold = await verdictOf("gold", GOLD);
    // the rewritten file passes in pytest, and its emissions (TestTee's inherited run, test_many's
    // ten calls) are believed and hold
    for (const id of gold.runIds) expect(gold.passed.has(id), id).toBe(true);
    expect([...gold.outside]).toEqual([]);

    const wrong = await verdictOf("wrong", WRONG);
    const fails = (id: string) => !wrong.passed.has(id) || wrong.outside.has(id);
    expect(wrong.runIds.filter(fails)).toEqual(wrong.runIds);
    // the inherited and the calling test fail on their own emissions, not on an unbelievable stream
    expect(wrong.outside.get(`${FILE}::TestTee::test_buf`)).toMatch(/failed outside the sandbox/);
    // (test_many runs under a fresh id: it has decoys)
    expect(wrong.outside.get(wrong.runIds[4]!)).toMatch(/failed outside the sandbox/);
  }, 120_000);
});
