import { describe, expect, it } from "vitest";
import { evalSelectionProblem, goldWithoutSolution, linksLatest } from "../../../src/cli/commands/eval.js";
import { UsageError } from "../../../src/errors.js";

describe("eval: what to evaluate", () => {
  it("needs something, and a dataset alone", () => {
    expect(evalSelectionProblem(1, 0, false)).toBeUndefined();
    expect(evalSelectionProblem(0, 2, false)).toBeUndefined();
    expect(evalSelectionProblem(0, 0, true)).toBeUndefined();
    const none = evalSelectionProblem(0, 0, false);
    expect(none).toBeInstanceOf(UsageError);
    expect(none!.message).toBe("nothing to evaluate");
    expect(evalSelectionProblem(0, 1, true)!.message).toMatch(/--dataset cannot be combined/);
    expect(evalSelectionProblem(1, 0, true)!.message).toMatch(/--dataset cannot be combined/);
  });

  it("policy gold names the scenarios without a reference solution", () => {
    const scenarios = [
      { id: "a", spec: { solution: "diff" } },
      { id: "b", spec: {} },
      { id: "c", spec: {} },
    ];
    expect(goldWithoutSolution(["empty"], scenarios)).toBeUndefined();
    expect(goldWithoutSolution(["gold"], [scenarios[0]!])).toBeUndefined();
    expect(goldWithoutSolution(["empty", "gold"], scenarios)!.message).toBe(
      "policy gold replays a reference solution, and scenario(s) b, c have none",
    );
  });
});

describe("eval: evals/latest", () => {
  it("is updated only by an eval in the default place, never by one given --out", () => {
    expect(linksLatest("/w/evals/20261207T000000Z-abc", "/w", false)).toBe(true);
    expect(linksLatest("evals/20261207T000000Z-abc", "/w", false)).toBe(true); // a resumed default eval
    expect(linksLatest("/w/evals/mine", "/w", true)).toBe(false);
    expect(linksLatest("/elsewhere/e1", "/w", true)).toBe(false);
    expect(linksLatest("/elsewhere/e1", "/w", false)).toBe(false); // --resume of an --out eval
  });
});
