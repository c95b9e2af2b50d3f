import { describe, expect, it } from "vitest";
import { COST_PARTS, costLine, DEFAULT_PARTS, parseCostArgs } from "../cost/summary.js";

describe("the cost bench's options", () => {
  it("defaults to the parts of the last line: rollout, pss, cli (the product's --reuse)", () => {
    const o = parseCostArgs([]);
    expect(o.parts).toEqual(["rollout", "pss", "cli"]);
    expect(DEFAULT_PARTS.every((p) => COST_PARTS.includes(p))).toBe(true);
    expect(o.reps).toBeGreaterThanOrEqual(1);
    expect(o.reuse).toBeUndefined();
  });

  it("takes --reuse and --cli-reps", () => {
    expect(parseCostArgs(["--reuse", "1", "--cli-reps", "3"])).toMatchObject({ reuse: 1, cliReps: 3 });
  });

  it("takes parts, counts and the task", () => {
    const o = parseCostArgs(["--parts", "boot,gateway", "--reps", "1", "--sandbox-reps", "5", "--task", "x"]);
    expect(o).toMatchObject({ parts: ["boot", "gateway"], reps: 1, sandboxReps: 5, task: "x" });
  });

  it("names the flag or part that is wrong", () => {
    expect(() => parseCostArgs(["--parts", "boot,cpu"])).toThrow(/unknown part\(s\) cpu/);
    expect(() => parseCostArgs(["--reps", "0"])).toThrow(/--reps must be a whole number ≥ 1, got '0'/);
    expect(() => parseCostArgs(["--reps"])).toThrow(/--reps needs a value/);
    expect(() => parseCostArgs(["--bogus", "1"])).toThrow(/unknown flag --bogus/);
  });
});

describe("the cost bench's last line", () => {
  it("reads exactly as the issue asks", () => {
    expect(costLine({ trajCpuRatio: 0.456, trajPerCoreMinRatio: 2.5, pssMiB: 140.4, cliStartS: 0.128 })).toBe(
      "cost: traj-cpu 0.46x traj/core-min 2.50x pss 140 MiB cli-start 0.13 s",
    );
  });

  it("says n/a for a part not run or not measurable", () => {
    expect(costLine({ pssMiB: 200, trajCpuRatio: Number.NaN })).toBe(
      "cost: traj-cpu n/ax traj/core-min n/ax pss 200 MiB cli-start n/a s",
    );
  });
});
