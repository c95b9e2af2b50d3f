import { describe, expect, it } from "vitest";
import { threadCpuLine } from "../scale/judge.js";
import { threadCpuSplit, threadTicks, ticksOfStat } from "../scale/thread-cpu.js";

describe("the runner's CPU by thread (thread-cpu.ts)", () => {
  it("reads utime + stime past a command holding spaces and parentheses", () => {
    const stat = "4242 (node (x) y) S 1 2 3 0 -1 4194304 10 0 0 0 120 35 0 0 20 0 12 0 100 0 0";
    expect(ticksOfStat(stat)).toBe(155);
    expect(ticksOfStat("garbage")).toBeUndefined();
  });

  it("splits the main thread from the others, largest first, counting threads born meanwhile from zero", () => {
    const before = new Map([
      [100, 50],
      [101, 10],
      [102, 3],
    ]);
    const after = new Map([
      [100, 80],
      [101, 90],
      [102, 4],
      [103, 7],
    ]);
    expect(threadCpuSplit(before, after, 100, 10)).toEqual({
      mainMs: 300,
      topOthersMs: [800, 70, 10],
      othersMs: 880,
    });
    expect(threadCpuLine({ mainMs: 300, topOthersMs: [800], othersMs: 880 }, 2)).toBe(
      "runner CPU by thread: main 0.3 s (15 %); others 0.9 s (44 %), largest 0.8 s (40 %) " +
        "(% of the wall time; the gateway's thread is one of the others)",
    );
  });

  it("reads this process's own threads", () => {
    const ticks = threadTicks();
    expect(ticks.has(process.pid)).toBe(true);
  });
});
