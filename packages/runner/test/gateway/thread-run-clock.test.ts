import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { ownRunMs } from "../../src/gateway/serve-call.js";
import { schedRunMs, threadRunClock } from "../../src/gateway/thread-run-clock.js";

describe("the thread's run clock (schedstat)", () => {
  it("reads the run time of a schedstat line, in ms", () => {
    expect(schedRunMs("340504 77034 2\n")).toBeCloseTo(0.340504);
    expect(schedRunMs("")).toBeUndefined();
    expect(schedRunMs("garbage")).toBeUndefined();
  });

  it("caps a call's own wall time by what the thread ran meanwhile", () => {
    expect(ownRunMs(40, 3)).toBe(3); // the thread waited for a core most of the time
    expect(ownRunMs(4, 30)).toBe(4); // it ran other calls' work too: the call's own wall bounds it
    expect(ownRunMs(5, -1)).toBe(0);
  });

  it.skipIf(!existsSync("/proc/thread-self/schedstat"))(
    "advances with this thread's work, not with its sleep (needs Linux /proc/thread-self)",
    async () => {
      const clock = threadRunClock()!;
      const t0 = clock.now();
      await new Promise((r) => setTimeout(r, 50));
      const slept = clock.now() - t0;
      const t1 = clock.now();
      const giveUp = performance.now() + 10_000;
      let x = 0;
      while (clock.now() - t1 < 20 && performance.now() < giveUp) x++;
      expect(x).toBeGreaterThan(0);
      expect(clock.now() - t1).toBeGreaterThanOrEqual(20);
      expect(slept).toBeLessThan(20); // 50 ms asleep ran (almost) nothing
      clock.close();
      expect(clock.now()).toBeNaN();
    },
  );
});
