import { describe, expect, it } from "vitest";
import { mergeRuns } from "../../src/scoring/scorer.js";

const v = (id: string, kind: "fail_to_pass" | "pass_to_pass" | "eval_cmd", passed: boolean) => ({
  id,
  kind,
  passed,
  exitCode: passed ? 0 : 1,
  timedOut: false,
});

describe("mergeRuns", () => {
  it("a test passes only if it passed in every repeat; differing results are flaky", () => {
    const m = mergeRuns([
      [v("a", "fail_to_pass", true), v("b", "pass_to_pass", true), v("c", "pass_to_pass", false)],
      [v("a", "fail_to_pass", false), v("b", "pass_to_pass", true), v("c", "pass_to_pass", false)],
    ]);
    expect(m.results).toEqual({ failToPass: { a: "failed" }, passToPass: { b: "passed", c: "failed" } });
    expect(m.flaky).toEqual(["a"]);
  });

  it("keeps the first failing eval_cmd run", () => {
    const m = mergeRuns([
      [v("eval_cmd", "eval_cmd", true)],
      [{ ...v("eval_cmd", "eval_cmd", false), exitCode: 3 }],
    ]);
    expect(m.evalCmd).toEqual({ exitCode: 3, timedOut: false, passed: false });
    expect(m.flaky).toEqual(["eval_cmd"]);
  });
});
