import { describe, expect, it } from "vitest";
import { type ExternalSite, MAX_INT_DIGITS } from "../../../src/scoring/externalize/canon.js";
import { nodeKeyOf } from "../../../src/scoring/externalize/run.js";
import {
  borrowedRun,
  externalVerdict,
  MAX_EMISSION_NESTING,
  nestsDeeperThan,
} from "../../../src/scoring/externalize/verdict.js";

const S1 = "aaaaaaaaaaaaaaaa";
const S2 = "bbbbbbbbbbbbbbbb";
const S3 = "dddddddddddddddd";
const sites: ExternalSite[] = [
  {
    site: S1,
    test: "t.py::test_a",
    kind: "eq",
    expected: { t: "str", v: "1.0 KiB" },
    opts: {},
    count: "one",
    pair: false,
  },
  {
    site: S2,
    test: "t.py::test_p",
    kind: "eq",
    expected: { t: "int", v: "3" },
    opts: {},
    count: "any",
    pair: false,
  },
  { site: S3, test: "t.py::test_pair", kind: "eq", expected: null, opts: {}, count: "one", pair: true },
];
const line = (s: string, n: string, v: unknown) => `${JSON.stringify({ s, n, v })}\n`;
const ids = ["t.py::test_a", "t.py::test_p[1]", "t.py::test_p[2]", "t.py::test_other"];

describe("externalVerdict (the scorer's comparison outside the sandbox)", () => {
  it("passes tests whose emissions hold, and does not judge tests without sites", () => {
    const text =
      line(S1, "t.py::test_a", { t: "str", v: "1.0 KiB" }) +
      line(S2, "t.py::test_p[1]", { t: "int", v: "3" }) +
      line(S2, "t.py::test_p[2]", { t: "float", v: "3.0" }) +
      line(S2, "t.py::test_p[2]", { t: "int", v: "3" });
    expect([...externalVerdict(ids, sites, text)]).toEqual([]);
  });
  it("an id cut at a space in its parameters (SWE-bench's first word) stands for each case it starts (pylint's test_csv_regex_comma_in_quantifier[foo,)", () => {
    const cut = "t.py::test_p[foo,";
    const ok =
      line(S2, "t.py::test_p[foo, bar-e2]", { t: "int", v: "3" }) +
      line(S2, "t.py::test_p[foo, bar{1,3}-e3]", { t: "int", v: "3" }) +
      line(S2, "t.py::test_p[foo-e0]", { t: "int", v: "9" });
    expect([...externalVerdict([cut], sites, ok)]).toEqual([]);
    const bad = ok + line(S2, "t.py::test_p[foo, bar{1,3}-e3]", { t: "int", v: "4" });
    expect(externalVerdict([cut], sites, bad).get(cut)).toMatch(
      /test_p\[foo, bar\{1,3\}-e3\] failed outside/,
    );
    expect(
      externalVerdict([cut], sites, line(S2, "t.py::test_p[foo-e0]", { t: "int", v: "3" })).get(cut),
    ).toMatch(/emitted nothing/);
  });
  it("with the short-paths parser, an absolute-path parameter is graded by its last segment (requests' test_unzipped_paths_unchanged[/test_utils.py])", () => {
    const id = "t.py::test_p[/test_utils.py]";
    const text = line(S2, "t.py::test_p[/tmp/w/tree/tests/test_utils.py]", { t: "int", v: "3" });
    expect(externalVerdict([id], sites, text).get(id)).toMatch(/emitted nothing/);
    expect([...externalVerdict([id], sites, text, nodeKeyOf("pytest-short-paths"))]).toEqual([]);
    expect(nodeKeyOf("pytest")).toBeUndefined();
  });
  it("fails a wrong value, a missing emission, a duplicated one, and a silent case", () => {
    const wrong =
      line(S1, "t.py::test_a", { t: "str", v: "1024.0 B" }) +
      line(S2, "t.py::test_p[1]", { t: "int", v: "3" });
    const v = externalVerdict(ids, sites, wrong);
    expect(v.get("t.py::test_a")).toMatch(/failed outside the sandbox/);
    expect(v.get("t.py::test_p[2]")).toMatch(/emitted nothing/);
    expect(v.has("t.py::test_p[1]")).toBe(false);
    const twice = line(S1, "t.py::test_a", { t: "str", v: "1.0 KiB" }).repeat(2);
    expect(externalVerdict(ids, sites, twice).get("t.py::test_a")).toMatch(/emitted 2 times/);
    expect(externalVerdict(ids, sites, "").get("t.py::test_a")).toMatch(/emitted nothing/);
  });
  it("fails every externalized test on a malformed, unknown or misplaced line (fail closed)", () => {
    const ok = line(S1, "t.py::test_a", { t: "str", v: "1.0 KiB" });
    for (const bad of [
      "not json\n",
      line(S1, "t.py::test_a", { t: "str" }),
      line("cccccccccccccccc", "t.py::test_a", { t: "none" }),
      // another file's test (one of the same file may run it: borrowedRun below)
      line(S2, "u.py::test_a", { t: "int", v: "3" }),
      `${JSON.stringify({ s: S1, n: "t.py::test_a", v: { t: "str", v: "x" }, extra: 1 })}\n`,
    ]) {
      const v = externalVerdict(ids, sites, ok + bad);
      expect(v.get("t.py::test_a"), bad).toMatch(/cannot be believed/);
      expect(v.get("t.py::test_p[1]"), bad).toMatch(/cannot be believed/);
    }
  });
  it("a pair site compares the two sides the test emitted; a missing side is an anomaly", () => {
    const pid = ["t.py::test_pair"];
    const pairLine = (v: unknown, w?: unknown) =>
      `${JSON.stringify({ s: S3, n: "t.py::test_pair", v, ...(w === undefined ? {} : { w }) })}\n`;
    expect([
      ...externalVerdict(pid, sites, pairLine({ t: "int", v: "2" }, { t: "float", v: "2.0" })),
    ]).toEqual([]);
    expect(
      externalVerdict(pid, sites, pairLine({ t: "int", v: "2" }, { t: "int", v: "3" })).get(pid[0]!),
    ).toMatch(/failed outside/);
    expect(externalVerdict(pid, sites, pairLine({ t: "int", v: "2" })).get(pid[0]!)).toMatch(
      /lacks an expected side/,
    );
    const carried = line(S1, "t.py::test_a", { t: "str", v: "1.0 KiB" }).replace(
      "}}\n",
      '},"w":{"t":"none"}}\n',
    );
    expect(externalVerdict(ids, sites, carried).get("t.py::test_a")).toMatch(/carries an expected side/);
  });
  it("fails every externalized test when the run reported no emissions at all", () => {
    const v = externalVerdict(ids, sites, undefined);
    expect(v.size).toBe(3);
    expect(v.has("t.py::test_other")).toBe(false);
  });
});

describe("sites on one side of an if on the parameters (cases)", () => {
  const SA = "eeeeeeeeeeeeeeee";
  const SB = "ffffffffffffffff";
  const branch = (site: string, run: string[], skip: string[], v: string): ExternalSite => ({
    site,
    test: "t.py::test_m",
    kind: "eq",
    expected: { t: "str", v },
    opts: {},
    count: "one",
    pair: false,
    cases: { run, skip },
  });
  const mine = [branch(SA, ["a"], ["b", "c"], "A"), branch(SB, ["b"], ["a", "c"], "B")];
  const m = (c: string) => `t.py::test_m[${c}]`;

  it("a case runs the sites of its side; one whose side has none emits nothing and is not judged", () => {
    const text = line(SA, m("a"), { t: "str", v: "A" }) + line(SB, m("b"), { t: "str", v: "B" });
    expect([...externalVerdict([m("a"), m("b"), m("c")], mine, text)]).toEqual([]);
  });

  it("fails a case steered to the other side (its site missing, or one emitted where it must not be)", () => {
    const steered = line(SB, m("a"), { t: "str", v: "B" }) + line(SB, m("b"), { t: "str", v: "B" });
    expect([...externalVerdict([m("a"), m("b")], mine, steered).keys()]).toEqual([m("a")]);
    const silent = line(SB, m("b"), { t: "str", v: "B" });
    expect(externalVerdict([m("a")], mine, silent).get(m("a"))).toMatch(/emitted nothing/);
  });

  it("fails a case the host did not evaluate (fail closed)", () => {
    const text = line(SA, m("z"), { t: "str", v: "A" });
    expect(externalVerdict([m("z")], mine, text).get(m("z"))).toMatch(/did not evaluate/);
  });
});

describe("emissions the host's reading cannot be held up by (red team 2026-12-07 night)", () => {
  const deep = (depth: number) =>
    `{"s":"${S1}","n":"t.py::test_a","v":${'{"t":"list","v":['.repeat(depth)}{"t":"none"}${"]}".repeat(depth)}}\n`;
  it("a line nested past any emitter's rendering is an anomaly, not a stack overflow", () => {
    // 4 000 levels made the schema check throw a RangeError: scoring threw, reward null
    const v = externalVerdict(["t.py::test_a"], sites, deep(4000));
    expect(v.get("t.py::test_a")).toMatch(
      /cannot be believed: emission line 1 nests deeper than any emitter writes/,
    );
    expect(nestsDeeperThan(JSON.parse(deep(4000)), MAX_EMISSION_NESTING)).toBe(true);
  });
  it("the deepest rendering an emitter writes (64 levels of dicts) still parses", () => {
    let v: unknown = { t: "none" };
    for (let i = 0; i < 64; i++) v = { t: "dict", v: [[{ t: "str", v: "k" }, v]] };
    expect(nestsDeeperThan(v, MAX_EMISSION_NESTING)).toBe(false);
    const site = { ...sites[0]!, expected: v as ExternalSite["expected"] };
    expect(externalVerdict(["t.py::test_a"], [site], line(S1, "t.py::test_a", v))).toEqual(new Map());
  });
  it("an int of more digits than the host parses cheaply fails the schema", () => {
    const big = { t: "int", v: "7".repeat(MAX_INT_DIGITS + 2) };
    expect(
      externalVerdict(["t.py::test_p[1]"], sites, line(S2, "t.py::test_p[1]", big)).get("t.py::test_p[1]"),
    ).toMatch(/cannot be believed: emission line 1 is not a site/);
    const ok = { t: "int", v: "7".repeat(MAX_INT_DIGITS) };
    expect(
      externalVerdict(["t.py::test_p[1]"], sites, line(S2, "t.py::test_p[1]", ok)).get("t.py::test_p[1]"),
    ).toMatch(/failed outside the sandbox/);
  });
});

describe("a test's body run by another test of its file (borrowedRun)", () => {
  // pytest-7521's capture tests: TestTee inherits TestBase::test_buf, test_many calls test_one
  const SB = "1111111111111111";
  const SO = "2222222222222222";
  const SC = "3333333333333333";
  const at = (site: string, test: string, v: string, extra: Partial<ExternalSite> = {}): ExternalSite => ({
    site,
    test,
    kind: "eq",
    expected: { t: "str", v },
    opts: {},
    count: "one",
    pair: false,
    ...extra,
  });
  const borrowed = [
    at(SB, "c.py::TestBase::test_buf", "foo\r\n"),
    at(SO, "c.py::TestFD::test_one", "hello"),
    at(SC, "c.py::test_case", "A", { byCase: { a: { t: "str", v: "A" } } }),
  ];
  const gids = [
    "c.py::TestBase::test_buf",
    "c.py::TestTee::test_buf",
    "c.py::TestFD::test_one",
    "c.py::TestFD::test_many",
  ];
  const str = (v: string) => ({ t: "str", v });
  const gold =
    line(SB, "c.py::TestBase::test_buf", str("foo\r\n")) +
    line(SB, "c.py::TestTee::test_buf", str("foo\r\n")) +
    line(SO, "c.py::TestFD::test_one", str("hello")) +
    line(SO, "c.py::TestFD::test_many", str("hello")).repeat(3);

  it("an inherited method's and a called test's emissions are those tests' runs, not an anomaly", () => {
    expect(borrowedRun("c.py::TestTee::test_buf", "c.py::TestBase::test_buf")).toBe(true);
    expect(borrowedRun("other.py::TestTee::test_buf", "c.py::TestBase::test_buf")).toBe(false);
    expect(borrowedRun("", "c.py::TestBase::test_buf")).toBe(false);
    expect([...externalVerdict(gids, borrowed, gold)]).toEqual([]);
  });

  it("holds each borrowed run to the site's expected value: a wrong value there fails that test only", () => {
    const wrong = gold.replace(
      line(SB, "c.py::TestTee::test_buf", str("foo\r\n")),
      line(SB, "c.py::TestTee::test_buf", str("foo\n")),
    );
    const v = externalVerdict(gids, borrowed, wrong);
    expect([...v.keys()]).toEqual(["c.py::TestTee::test_buf"]);
    expect(v.get("c.py::TestTee::test_buf")).toMatch(/failed outside the sandbox/);
    const many = gold.replace(
      line(SO, "c.py::TestFD::test_many", str("hello")),
      line(SO, "c.py::TestFD::test_many", str("hell")),
    );
    expect([...externalVerdict(gids, borrowed, many).keys()]).toEqual(["c.py::TestFD::test_many"]);
  });

  it("a borrowed run of a per-case site is not judged (its case is the other test's); another file's node is still an anomaly", () => {
    const text =
      gold + line(SC, "c.py::test_case[a]", str("A")) + line(SC, "c.py::TestFD::test_many", str("B"));
    expect([...externalVerdict([...gids, "c.py::test_case[a]"], borrowed, text)]).toEqual([]);
    const stray = gold + line(SO, "d.py::TestFD::test_many", str("hello"));
    expect(externalVerdict(gids, borrowed, stray).get("c.py::TestFD::test_one")).toMatch(
      /cannot be believed/,
    );
  });
});
