import { describe, expect, it } from "vitest";
import {
  agentPhaseCpuOf,
  cpuBetween,
  createRunnerCpuLedger,
  processCpuS,
  RunnerCpuShares,
} from "../../src/rollout/phase-cpu.js";

describe("cpuBetween", () => {
  it("is the counter's rise, to the millisecond", () => {
    expect(cpuBetween(1.25, 3.7504)).toBe(2.5);
    expect(cpuBetween(0, 0)).toBe(0);
  });

  it("is undefined when a reading is missing, not finite or the counter went backwards", () => {
    expect(cpuBetween(undefined, 2)).toBeUndefined();
    expect(cpuBetween(1, undefined)).toBeUndefined();
    expect(cpuBetween(1, Number.NaN)).toBeUndefined();
    expect(cpuBetween(3, 2)).toBeUndefined();
  });
});

describe("agentPhaseCpuOf", () => {
  it("splits the worker's counter at the hand-over: boot before, agent after", () => {
    expect(agentPhaseCpuOf(4.5, 6)).toEqual({ bootCpuS: 4.5, agentCpuS: 1.5 });
  });

  it("leaves out what was not measured", () => {
    expect(agentPhaseCpuOf(undefined, undefined)).toEqual({});
    expect(agentPhaseCpuOf(2, undefined)).toEqual({ bootCpuS: 2 });
  });
});

describe("the runner's CPU split among trajectories", () => {
  it("gives each interval's CPU in equal parts to the trajectories holding a slot then", () => {
    const s = new RunnerCpuShares(10);
    s.hold("a", true, 11); // 1 s with nobody: nobody's
    s.hold("b", true, 13); // 2 s: a
    s.hold("a", false, 17); // 4 s: a 2, b 2
    s.hold("b", false, 18); // 1 s: b
    expect(s.take("a", 20)).toBe(4);
    expect(s.take("b", 20)).toBe(3);
  });

  it("a trajectory that never held a slot has no share, and taking forgets it", () => {
    const s = new RunnerCpuShares(0);
    s.hold("a", true, 0);
    s.settle(2);
    expect(s.take("z", 2)).toBeUndefined();
    expect(s.take("a", 3)).toBe(3); // still holding: settled up to the take
    expect(s.take("a", 3)).toBe(0); // taken: what it holds starts again from the take
    s.hold("a", false, 5); // 2 s alone since the take
    expect(s.take("a", 6)).toBe(2);
    expect(s.take("a", 6)).toBeUndefined();
    expect(s.kept).toBe(0);
  });

  it("a slot taken twice counts once, a release without a hold gives nothing", () => {
    const s = new RunnerCpuShares(0);
    s.hold("a", true, 0);
    s.hold("a", true, 1);
    s.hold("b", true, 2); // a 2
    s.hold("c", false, 3); // a 0.5, b 0.5
    s.hold("a", false, 4); // a 0.5, b 0.5
    expect(s.take("a", 5)).toBe(3);
    expect(s.take("b", 5)).toBe(2);
    expect(s.take("c", 5)).toBeUndefined();
  });

  it("never hands out a counter that went backwards", () => {
    const s = new RunnerCpuShares(5);
    s.hold("a", true, 5);
    s.settle(4);
    expect(s.take("a", 4)).toBe(0);
  });

  it("splits among a thousand as among two: joined and left at different times", () => {
    const s = new RunnerCpuShares(0);
    for (let i = 0; i < 1000; i++) s.hold(`t${i}`, true, 0);
    s.settle(10); // 10 s among 1000: 0.01 s each
    for (let i = 0; i < 500; i++) s.hold(`t${i}`, false, 10);
    s.hold("late", true, 10);
    s.settle(15.01); // 5.01 s among 501: 0.01 s each
    expect(s.take("t7", 15.01)).toBe(0.01);
    expect(s.take("t700", 15.01)).toBe(0.02);
    expect(s.take("late", 15.01)).toBe(0.01);
    expect(s.kept).toBe(1000); // t7 released and taken: forgotten; the taken but active kept
  });

  it("the ledger reads the counter at every event (a scripted counter)", () => {
    const readings = [0, 1, 3, 3.5, 6, 7];
    const ledger = createRunnerCpuLedger(() => readings.shift()!);
    ledger.hold("a"); // 1
    ledger.hold("b"); // 3: a 2
    ledger.release("a"); // 3.5: a 0.25, b 0.25
    expect(ledger.take("a")).toBe(2.25); // 6: b 2.5
    expect(ledger.take("b")).toBe(3.75); // 7: b 1 more
  });

  it("the process counter is this process's CPU and only rises", () => {
    const a = processCpuS();
    let x = 0;
    for (let i = 0; i < 1e6; i++) x += Math.sqrt(i);
    expect(x).toBeGreaterThan(0);
    expect(processCpuS()).toBeGreaterThan(a);
  });
});
