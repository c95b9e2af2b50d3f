import { describe, expect, it } from "vitest";
import { combine, evalCmdValue, type Term, testsTerm } from "../../src/scoring/reward.js";

const r = (
  f2p: Record<string, "passed" | "failed" | "missing">,
  p2p: Record<string, "passed" | "failed" | "missing">,
) => ({
  failToPass: f2p,
  passToPass: p2p,
});

describe("testsTerm", () => {
  it("is 1 only when every FAIL_TO_PASS and PASS_TO_PASS test passes (partial credit none)", () => {
    expect(testsTerm(r({ a: "passed" }, { b: "passed", c: "passed" }), "none")).toMatchObject({
      value: 1,
      resolved: true,
      failToPass: { passed: 1, total: 1 },
      passToPass: { passed: 2, total: 2 },
    });
    expect(testsTerm(r({ a: "passed" }, { b: "failed" }), "none").value).toBe(0);
    expect(testsTerm(r({ a: "missing" }, {}), "none").value).toBe(0);
  });

  it("gives passed / total with fraction credit", () => {
    expect(
      testsTerm(r({ a: "passed", b: "failed" }, { c: "passed", d: "missing" }), "fraction"),
    ).toMatchObject({
      value: 0.5,
      resolved: false,
    });
  });

  it("scores a task with no tests 0 (nothing was proven)", () => {
    expect(testsTerm(r({}, {}), "none").value).toBe(0);
    expect(testsTerm(r({}, {}), "fraction").value).toBe(0);
  });
});

describe("evalCmdValue", () => {
  it("is 1 for exit 0 in time, else 0", () => {
    expect(evalCmdValue(0, false)).toBe(1);
    expect(evalCmdValue(1, false)).toBe(0);
    expect(evalCmdValue(0, true)).toBe(0);
  });
});

describe("combine", () => {
  const t = (name: Term["name"], value: number | null, weight: number): Term => ({ name, value, weight });

  it("renormalizes over the terms present: a task without hidden tests has no tests term at all", () => {
    // a dataset row: build and lint alone decide, whatever --weight-tests says
    expect(combine([t("build", 1, 1), t("lint", 0, 0.5)])).toBeCloseTo(2 / 3);
    expect(combine([t("build", 1, 0.5)])).toBe(1);
    expect(combine([t("build", 1, 2), t("judge", 0.4, 1)])).toBeCloseTo(0.8);
    // an absent tests term is not a 0: next to a 0 tests term of weight 1 the same build scores 1/3
    expect(combine([t("tests", 0, 1), t("build", 1, 0.5)])).toBeCloseTo(1 / 3);
  });

  it("is the weighted mean of the terms that have a value", () => {
    expect(combine([t("tests", 1, 0.6), t("build", 1, 0.1), t("judge", 0.5, 0.3)])).toBeCloseTo(0.85);
    expect(combine([t("tests", 0, 1), t("lint", 1, 1)])).toBe(0.5);
  });

  it("leaves out terms without a value or weight (a judge parse failure does not count as 0)", () => {
    expect(combine([t("tests", 1, 0.7), t("judge", null, 0.3)])).toBe(1);
    expect(combine([t("tests", 1, 1), t("lint", 0, 0)])).toBe(1);
  });

  it("is 0 with no usable term, and 0 whenever a gate applies", () => {
    expect(combine([])).toBe(0);
    expect(combine([t("judge", null, 1)])).toBe(0);
    expect(combine([t("tests", 1, 1)], { reason: "diff_apply_failed", detail: "patch does not apply" })).toBe(
      0,
    );
  });
});
