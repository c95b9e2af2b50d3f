import { cp, readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { ExternalSite } from "../../../src/scoring/externalize/canon.js";
import { keptForOpaque, opaqueTestsOf, opaqueTypes } from "../../../src/scoring/externalize/opaque.js";
import { recordOpaque, withOpaque } from "../../../src/scoring/externalize/opaque-record.js";
import { nodeKeyOf } from "../../../src/scoring/externalize/run.js";
import { hiddenTestsOf } from "../../../src/scoring/hidden-tests.js";
import { BUILTIN_CATALOG_DIR, loadTaskDir } from "../../../src/tasks/catalog.js";
import { tempDir } from "../../helpers/temp-dir.js";

// Picking, from gold's emissions, the graded tests whose literal assertion got a value the host
// cannot compare (issues 41/42: requests' `assert 'spam' in cid` on a CaseInsensitiveDict).

const IN = "aaaaaaaaaaaaaaaa";
const EQ = "bbbbbbbbbbbbbbbb";
const PAIR = "cccccccccccccccc";
const ISNOT = "dddddddddddddddd";
const site = (s: string, test: string, kind: ExternalSite["kind"], pair = false): ExternalSite => ({
  site: s,
  test,
  kind,
  expected: pair ? null : kind === "isnot" ? { t: "none" } : { t: "str", v: "spam" },
  opts: {},
  count: "any",
  pair,
});
const sites = [
  site(IN, "t.py::test_cid", "in"),
  site(EQ, "t.py::test_keys", "eq"),
  site(PAIR, "t.py::test_pair", "eq", true),
  site(ISNOT, "t.py::test_isnot", "isnot"),
];
const obj = { t: "obj", type: "requests.structures.CaseInsensitiveDict", repr: "{'Spam': 1}" };
const line = (s: string, n: string, v: unknown, w?: unknown) =>
  `${JSON.stringify({ s, n, v, ...(w ? { w } : {}) })}\n`;
const ids = ["t.py::test_cid", "t.py::test_keys[a]", "t.py::test_pair", "t.py::test_isnot"];

describe("opaqueTestsOf (the record's producer)", () => {
  it("picks tests whose literal site failed on an opaque value, naming its type; not pairs, not sites an opaque value satisfies", () => {
    const text =
      line(IN, "t.py::test_cid", obj) +
      line(EQ, "t.py::test_keys[a]", { t: "list", v: [{ t: "deep" }] }) +
      line(PAIR, "t.py::test_pair", obj, { t: "str", v: "x" }) +
      line(ISNOT, "t.py::test_isnot", obj);
    expect(opaqueTestsOf(ids, sites, text)).toEqual({
      "t.py::test_cid": "requests.structures.CaseInsensitiveDict",
      "t.py::test_keys[a]": "a value nested too deep to render",
    });
  });
  it("a plain value that fails is a wrong answer, not opaque; unbelievable or missing emissions pick nothing", () => {
    const wrong = line(IN, "t.py::test_cid", { t: "list", v: [{ t: "str", v: "eggs" }] });
    expect(opaqueTestsOf(ids, sites, wrong)).toEqual({});
    expect(opaqueTestsOf(ids, sites, `not json\n${line(IN, "t.py::test_cid", obj)}`)).toEqual({});
    expect(opaqueTestsOf(ids, sites, undefined)).toEqual({});
    expect(opaqueTestsOf(ids, [], line(IN, "t.py::test_cid", obj))).toEqual({});
  });
  it("keys cases as the row's log parser does (requests' short paths)", () => {
    const id = "t.py::test_cid[/x.py]";
    const text = line(IN, "t.py::test_cid[/tmp/w/tests/x.py]", obj);
    expect(opaqueTestsOf([id], sites, text, nodeKeyOf("pytest-short-paths"))).toEqual({
      [id]: "requests.structures.CaseInsensitiveDict",
    });
  });
  it("finds opaque values inside containers, and none in plain ones", () => {
    expect(
      opaqueTypes({
        t: "dict",
        v: [
          [
            { t: "str", v: "k" },
            { t: "unrenderable", why: "recursion" },
          ],
        ],
      }),
    ).toEqual(["an unrenderable value (recursion)"]);
    expect(opaqueTypes({ t: "tuple", v: [{ t: "int", v: "1" }] })).toEqual([]);
  });
});

describe("keptForOpaque (the record's consumer)", () => {
  it("keeps every graded case of a recorded test function, and nothing without a record", () => {
    const graded = ["t.py::test_cid[a]", "t.py::test_cid[b]", "t.py::test_other"];
    expect([...keptForOpaque(graded, { "t.py::test_cid[a]": "X" })]).toEqual([
      "t.py::test_cid[a]",
      "t.py::test_cid[b]",
    ]);
    expect(keptForOpaque(graded, undefined).size).toBe(0);
  });
});

describe("withOpaque (validate --record-opaque)", () => {
  const spec = {
    id: "t",
    tests: {
      patch: "tests.patch",
      run: { kind: "suite", failToPass: ["a"], passToPass: ["b"], opaque: { b: "old" } },
    },
  };
  it("merges gold's picks into tests.run.opaque, reporting only the ids added", () => {
    const r = withOpaque(spec, { a: "X", b: "old" });
    expect(r).toEqual({
      spec: { ...spec, tests: { ...spec.tests, run: { ...spec.tests.run, opaque: { b: "old", a: "X" } } } },
      added: ["a"],
    });
  });
  it("refuses an id the task does not grade, and a task whose tests are no suite", () => {
    expect(withOpaque(spec, { c: "X" })).toEqual({ error: "c is no graded test of the task" });
    expect(withOpaque({ tests: { run: { kind: "ids" } } }, { a: "X" })).toMatchObject({
      error: expect.stringMatching(/not a suite/),
    });
  });
});

describe("recordOpaque (validate's write of a task file)", () => {
  it("writes a record the task schema loads and scoring is handed; a second write adds nothing; a stray id is refused by file", async () => {
    await using tmp = await tempDir("flakegym-opaque-record-");
    const dir = join(tmp.path, "b64-two-byte-tail");
    await cp(join(BUILTIN_CATALOG_DIR, "b64-two-byte-tail"), dir, { recursive: true });
    expect(await recordOpaque(dir, { encode_empty: "mod.Obj" })).toEqual(["encode_empty"]);
    const task = await loadTaskDir(dir);
    expect((await hiddenTestsOf(task, 1000)).suite?.opaque).toEqual({ encode_empty: "mod.Obj" });
    const before = await readFile(join(dir, "task.json"), "utf8");
    expect(await recordOpaque(dir, { encode_empty: "mod.Obj" })).toEqual([]);
    await expect(recordOpaque(dir, { nope: "X" })).rejects.toThrow(/task\.json: nope is no graded test/);
    expect(await readFile(join(dir, "task.json"), "utf8")).toBe(before);
  });
});
