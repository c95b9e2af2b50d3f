import { describe, expect, it } from "vitest";
import type { Canon, ExternalSite } from "../../../src/scoring/externalize/canon.js";
import {
  approxEqual,
  fnmatchRegExp,
  linesHold,
  pyContains,
  pyEqual,
  pyRegExp,
  satisfies,
} from "../../../src/scoring/externalize/compare.js";

const str = (v: string): Canon => ({ t: "str", v });
const int = (v: number | string): Canon => ({ t: "int", v: String(v) });
const float = (v: string): Canon => ({ t: "float", v });
const list = (...v: Canon[]): Canon => ({ t: "list", v });
const tuple = (...v: Canon[]): Canon => ({ t: "tuple", v });
const site = (kind: ExternalSite["kind"], expected: ExternalSite["expected"], opts = {}): ExternalSite => ({
  site: "0123456789abcdef",
  test: "t.py::test_x",
  kind,
  expected,
  opts,
  count: "one",
  pair: false,
});

describe("pyEqual (Python's == on rendered values)", () => {
  it("numbers compare across bool, int and float, exactly", () => {
    expect(pyEqual(int(1), float("1.0"))).toBe(true);
    expect(pyEqual({ t: "bool", v: true }, int(1))).toBe(true);
    expect(pyEqual(int("9007199254740993"), float("9007199254740992.0"))).toBe(false);
    expect(pyEqual(int("123456789012345678901234567890"), int("123456789012345678901234567890"))).toBe(true);
    expect(pyEqual(float("nan"), float("nan"))).toBe(false);
    expect(pyEqual(float("0.1"), float("0.1"))).toBe(true);
  });
  it("a list is not a tuple; strings are not bytes; None only equals None", () => {
    expect(pyEqual(list(int(1)), tuple(int(1)))).toBe(false);
    expect(pyEqual(str("ab"), { t: "bytes", v: "6162" })).toBe(false);
    expect(pyEqual({ t: "none" }, { t: "none" })).toBe(true);
    expect(pyEqual({ t: "none" }, int(0))).toBe(false);
  });
  it("dicts and sets are unordered", () => {
    const a: Canon = {
      t: "dict",
      v: [
        [str("a"), int(1)],
        [str("b"), int(2)],
      ],
    };
    const b: Canon = {
      t: "dict",
      v: [
        [str("b"), int(2)],
        [str("a"), float("1.0")],
      ],
    };
    expect(pyEqual(a, b)).toBe(true);
    expect(pyEqual({ t: "set", v: [int(1), int(2)] }, { t: "set", v: [int(2), int(1)] })).toBe(true);
    expect(pyEqual({ t: "set", v: [int(1)] }, { t: "set", v: [int(1), int(2)] })).toBe(false);
  });
  it("a value of an unknown type equals nothing (fail closed)", () => {
    const obj: Canon = { t: "obj", type: "m.AlwaysEqual", repr: "x" };
    expect(pyEqual(obj, obj)).toBe(false);
    expect(satisfies(site("eq", str("x")), obj)).not.toBe(true);
    expect(satisfies(site("ne", str("x")), obj)).not.toBe(true);
  });
});

describe("approximate comparisons", () => {
  it("pytest.approx: rel 1e-6 and abs 1e-12 by default; abs alone drops rel", () => {
    expect(approxEqual(float("0.30000000000000004"), float("0.3"), {})).toBe(true);
    expect(approxEqual(float("1.001"), float("1.0"), {})).toBe(false);
    expect(approxEqual(float("1.001"), float("1.0"), { rel: float("0.01") })).toBe(true);
    expect(approxEqual(float("100.5"), float("100.0"), { abs: float("0.1") })).toBe(false);
    expect(approxEqual(list(float("0.1"), float("0.2")), list(float("0.1000000001"), float("0.2")), {})).toBe(
      true,
    );
  });
  it("assertAlmostEqual rounds to 7 places by default, or takes a delta", () => {
    expect(satisfies(site("almost", float("1.0"), {}), float("1.00000001"))).toBe(true);
    expect(satisfies(site("almost", float("1.0"), {}), float("1.0001"))).not.toBe(true);
    expect(satisfies(site("almost", float("1.0"), { delta: float("0.01") }), float("1.005"))).toBe(true);
  });
});

describe("containment, identity and exceptions", () => {
  it("in: substrings of strings, items of lists, keys of dicts; an unknown container fails", () => {
    expect(pyContains(str("1.0 KiB"), str("KiB"))).toBe(true);
    expect(pyContains(list(int(1), int(2)), float("2.0"))).toBe(true);
    expect(pyContains({ t: "dict", v: [[str("k"), int(1)]] }, str("k"))).toBe(true);
    expect(satisfies(site("in", str("x")), { t: "obj", type: "m.C", repr: "x" })).not.toBe(true);
    expect(satisfies(site("notin", str("x")), str("abc"))).toBe(true);
    expect(pyContains({ t: "bytes", v: "0abc" }, { t: "bytes", v: "ab" })).toBe(false);
  });
  it("is None / is not None", () => {
    expect(satisfies(site("is", { t: "none" }), { t: "none" })).toBe(true);
    expect(satisfies(site("is", { t: "none" }), int(0))).not.toBe(true);
    expect(satisfies(site("isnot", { t: "none" }), int(0))).toBe(true);
  });
  it("raises: the expected class anywhere in the MRO, the match searched in the message", () => {
    const want = { names: ["errors.InterpolationError"], match: str("cycl(e|ic)") };
    const exc: Canon = {
      t: "exc",
      mro: ["tinyini.InterpolationError", "tinyini.ConfigError", "builtins.Exception"],
      msg: "a cycle of references",
    };
    expect(satisfies(site("raises", want), exc)).toBe(true);
    expect(satisfies(site("raises", { names: ["ConfigError"], match: null }), exc)).toBe(true);
    expect(satisfies(site("raises", { names: ["ValueError"], match: null }), exc)).toMatch(
      /not the expected class/,
    );
    expect(satisfies(site("raises", want), { t: "noexc" })).toMatch(/no exception/);
    expect(satisfies(site("raises", { names: ["InterpolationError"], match: str("^x") }), exc)).toMatch(
      /does not match/,
    );
  });
  it("translates Python's named groups and anchors", () => {
    expect(pyRegExp("(?P<a>x)(?P=a)\\Z")?.test("xx")).toBe(true);
    expect(pyRegExp("(?P<a>x)(?P=a)\\Z")?.test("xx\n")).toBe(false);
    expect(pyRegExp("(")).toBeUndefined();
  });
  it("assertCountEqual ignores order; assertSequenceEqual takes a tuple for a list", () => {
    expect(satisfies(site("counteq", list(int(1), int(2), int(2))), tuple(int(2), int(1), int(2)))).toBe(
      true,
    );
    expect(satisfies(site("counteq", list(int(1), int(2))), list(int(1), int(1)))).not.toBe(true);
    expect(satisfies(site("seqeq", list(int(1), int(2))), tuple(int(1), int(2)))).toBe(true);
  });
});

describe("pytester's line checks on emitted lines (fnmatch, re.match)", () => {
  const lines = list(
    str("== test session starts =="),
    str("t.py::test_a PASSED"),
    str("t.py::test_b FAILED"),
    str("1 failed, 1 passed"),
  );
  const opts = (match: string, absent = false, consecutive = false) => ({
    match: str(match),
    absent: { t: "bool", v: absent } as Canon,
    consecutive: { t: "bool", v: consecutive } as Canon,
  });
  it("fnmatch translates *, ?, [seq], [!seq] and keeps a lone [ and regex characters literal", () => {
    expect(fnmatchRegExp("*test_[ab] PASS?D").test("t.py::test_a PASSED")).toBe(true);
    expect(fnmatchRegExp("*test_[!a]*").test("t.py::test_a PASSED")).toBe(false);
    expect(fnmatchRegExp("[x").test("[x")).toBe(true);
    expect(fnmatchRegExp("a.c (1)").test("abc (1)")).toBe(false);
    expect(fnmatchRegExp("[]]").test("]")).toBe(true);
    expect(fnmatchRegExp("*passed").test("1 passed\nmore")).toBe(false);
  });
  it("patterns match in order, each after the previous one's line; consecutive means the next line", () => {
    expect(linesHold(lines, list(str("*test_a*"), str("*test_b FAILED")), opts("fnmatch"))).toBe(true);
    expect(linesHold(lines, list(str("*test_b*"), str("*test_a*")), opts("fnmatch"))).not.toBe(true);
    expect(linesHold(lines, list(str("*starts*"), str("*test_b*")), opts("fnmatch", false, true))).not.toBe(
      true,
    );
    expect(linesHold(lines, list(str("*starts*"), str("*test_a*")), opts("fnmatch", false, true))).toBe(true);
    expect(linesHold(lines, list(str(".*test_b F")), opts("re"))).toBe(true);
    expect(linesHold(lines, list(str("test_b")), opts("re"))).not.toBe(true);
  });
  it("no_*_line: no line matches; anything but a list of str fails closed", () => {
    expect(linesHold(lines, list(str("*error*")), opts("fnmatch", true))).toBe(true);
    expect(linesHold(lines, list(str("*FAILED")), opts("fnmatch", true))).not.toBe(true);
    expect(linesHold({ t: "obj", type: "x.Lines", repr: "*" }, list(str("*")), opts("fnmatch"))).not.toBe(
      true,
    );
    expect(satisfies(site("lines", list(str("*1 passed*")), opts("fnmatch")), lines)).toBe(true);
    expect(satisfies(site("lines", list(str("*2 passed*")), opts("fnmatch")), lines)).not.toBe(true);
  });
});
