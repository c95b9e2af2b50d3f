import { describe, expect, it } from "vitest";
import { AgentHold, holdOpens, releasePhaseMs } from "../scale/hold.js";

describe("the scale bench's hold (all N agents in their loop at one instant)", () => {
  it("opens once every expected agent arrived or ended before arriving", () => {
    expect(holdOpens(2, 0, 3)).toBe(false);
    expect(holdOpens(3, 0, 3)).toBe(true);
    expect(holdOpens(2, 1, 3)).toBe(true);
  });

  it("places a released agent's phase within the spread", () => {
    expect(releasePhaseMs(2300, () => 0)).toBe(0);
    expect(releasePhaseMs(2300, () => 0.5)).toBe(1150);
    expect(releasePhaseMs(-5, () => 0.9)).toBe(0);
  });

  it("keeps the first arrivals waiting until the last, then releases them all", async () => {
    const hold = new AgentHold(3, 60_000, 0);
    const signal = new AbortController().signal;
    const released: number[] = [];
    const a = hold.arrive(signal).then(() => released.push(1));
    const b = hold.arrive(signal).then(() => released.push(2));
    await new Promise((r) => setTimeout(r, 30));
    expect(released).toEqual([]);
    expect(hold.stats.openedAfterMs).toBeUndefined();
    hold.leave();
    await Promise.all([a, b]);
    expect(released.sort()).toEqual([1, 2]);
    expect(hold.stats).toMatchObject({ expected: 3, arrived: 2, gone: 1, timedOut: false });
  });

  it("opens on its bound and says so", async () => {
    const hold = new AgentHold(5, 40, 0);
    await hold.arrive(new AbortController().signal);
    expect(hold.stats.timedOut).toBe(true);
    expect(hold.stats.openedAfterMs).toBeGreaterThanOrEqual(30);
  });

  it("lets a stopped agent's wait end at once", async () => {
    const hold = new AgentHold(2, 60_000, 0);
    const stop = new AbortController();
    const waiting = hold.arrive(stop.signal);
    stop.abort();
    await waiting;
    expect(hold.stats.openedAfterMs).toBeUndefined();
  });
});
