import { describe, expect, it } from "vitest";
import {
  agentPhaseCpuOf,
  cpuBetween,
  createRunnerCpuLedger,
  processCpuS,
  runnerCpuHold,
  runnerCpuSettle,
  runnerCpuStart,
  runnerCpuTake,
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
    let s = runnerCpuStart(10);
    s = runnerCpuHold(s, "a", true, 11); // 1 s with nobody: nobody's
    s = runnerCpuHold(s, "b", true, 13); // 2 s: a
    s = runnerCpuHold(s, "a", false, 17); // 4 s: a 2, b 2
    s = runnerCpuHold(s, "b", false, 18); // 1 s: b
    const [a, s1] = runnerCpuTake(s, "a", 20);
    const [b] = runnerCpuTake(s1, "b", 20);
    expect(a).toBe(4);
    expect(b).toBe(3);
  });

  it("a trajectory that never held a slot has no share, and taking forgets it", () => {
    let s = runnerCpuHold(runnerCpuStart(0), "a", true, 0);
    s = runnerCpuSettle(s, 2);
    expect(runnerCpuTake(s, "z", 2)[0]).toBeUndefined();
    const [share, after] = runnerCpuTake(s, "a", 3);
    expect(share).toBe(3); // still holding: settled up to the take
    expect(after.shares.has("a")).toBe(false);
  });

  it("never hands out a counter that went backwards", () => {
    const s = runnerCpuSettle(runnerCpuHold(runnerCpuStart(5), "a", true, 5), 4);
    expect(runnerCpuTake(s, "a", 4)[0]).toBe(0);
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
