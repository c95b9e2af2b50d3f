import { describe, expect, it } from "vitest";
import {
  COST_PARTS,
  costLine,
  costSideOrder,
  DEFAULT_PARTS,
  parseCostArgs,
  perRepLines,
  perRepRatios,
  type RepMeasure,
} from "../cost/summary.js";

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

describe("perRepRatios", () => {
  const m = (side: RepMeasure["side"], rep: number, cpuS: number, groupCpuS = cpuS, load = "10.0 9 8") => ({
    side,
    rep,
    cpuS,
    groupCpuS,
    loadBefore: load,
    loadAfter: load,
  });

  it("judges each rep against the bare cores measured in it", () => {
    const r = perRepRatios([
      m("pool", 0, 32, 24),
      m("bare", 0, 66, 66, "20.0 1 1"),
      m("cli", 0, 30),
      m("cli", 1, 36, 36, "40.5 1 1"),
      m("bare", 1, 67),
      m("pool", 1, 33, 25),
    ]);
    expect(r.map((x) => [x.rep, x.trajCpu, x.perCoreMinCli, x.perCoreMinInProcess])).toEqual([
      [0, 24 / 66, 66 / 30, 66 / 32],
      [1, 25 / 67, 67 / 36, 67 / 33],
    ]);
    expect(r[1]!.load1).toContain(40.5);
    const lines = perRepLines(r);
    expect(lines[0]).toMatch(
      /rep 1: traj-cpu 0\.36x, traj\/core-min 2\.20x as installed \(2\.06x in-process\), 1-min load 10\.0–20\.0/,
    );
    expect(lines.at(-1)).toBe(
      "  every rep: traj-cpu ≤ 0.5x in 2 of 2, traj/core-min ≥ 2x (as installed) in 1 of 2",
    );
  });

  it("a side missing in a rep is n/a there, and that rep does not meet the goal", () => {
    const r = perRepRatios([m("bare", 0, 60), m("pool", 0, 30, 20)]);
    expect(Number.isNaN(r[0]!.perCoreMinCli)).toBe(true);
    expect(perRepLines(r)[0]).toMatch(/traj\/core-min n\/a as installed/);
    expect(perRepLines(r).at(-1)).toMatch(/in 0 of 1$/);
  });
});

describe("costSideOrder", () => {
  it("keeps the installed CLI next to the bare cores, alternating which goes first", () => {
    expect([0, 1, 2].map(costSideOrder)).toEqual([
      ["pool", "bare", "cli"],
      ["cli", "bare", "pool"],
      ["pool", "bare", "cli"],
    ]);
  });
});
