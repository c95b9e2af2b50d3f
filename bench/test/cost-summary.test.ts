import { describe, expect, it } from "vitest";
import { COST_PARTS, costLine, parseCostArgs } from "../cost/summary.js";

describe("the cost bench's options", () => {
  it("defaults to every part", () => {
    const o = parseCostArgs([]);
    expect(o.parts).toEqual([...COST_PARTS]);
    expect(o.reps).toBeGreaterThanOrEqual(1);
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
    expect(
      costLine({ bootCpuRatio: 0.234, trajPerCoreMinRatio: 2.5, pssMiB: 140.4, gatewayCpuRatio: 1.1 }),
    ).toBe("cost: boot-cpu 0.23x traj/core-min 2.50x pss 140 MiB gateway-cpu 1.10x");
  });

  it("says n/a for a part not run or not measurable", () => {
    expect(costLine({ pssMiB: 200, gatewayCpuRatio: Number.NaN })).toBe(
      "cost: boot-cpu n/ax traj/core-min n/ax pss 200 MiB gateway-cpu n/ax",
    );
  });
});
