import { describe, expect, it } from "vitest";
import { coreUnresponsive, creditStall, idleEndOf, watchdogStallMs, watchdogVerdict } from "../src/driver.js";

describe("the idle limit asks the core before it blames the agent", () => {
  const idle = {
    kind: "timeout",
    limit: "idle",
    detail:
      "the agent's command printed nothing for 8000 ms (`yes`); raise the idle limit for long quiet commands",
  } as const;

  it("a core that answers leaves the idle timeout as it is", () => {
    expect(idleEndOf(idle, undefined)).toBe(idle);
    expect(coreUnresponsive(idle)).toBe(false);
  });

  it("a core that does not answer (frozen, SIGSTOP) is infra_error, retried, and its shutdown calls are skipped", () => {
    const o = idleEndOf(idle, "DEADLINE_EXCEEDED: no answer in 5000 ms");
    expect(o.kind).toBe("infra_error");
    expect(o.detail).toMatch(
      /^the Cline core stopped answering .*DEADLINE_EXCEEDED.* after the agent's command printed nothing/,
    );
    expect(coreUnresponsive(o)).toBe(true);
  });
});

describe("a stall of this process (SIGSTOP of the runner, a frozen VM) is nobody's time", () => {
  it("a gap between watchdog ticks past 8 periods (at least 1 s) is the stall; a late tick under load within it is not", () => {
    expect(watchdogStallMs(0, 250, 250)).toBe(0);
    expect(watchdogStallMs(0, 900, 100)).toBe(0);
    expect(watchdogStallMs(0, 1900, 250)).toBe(0);
    expect(watchdogStallMs(0, 12_250, 250)).toBe(12_000);
  });

  it("credited: the idle clock moves on by the stall (never past now), the wall clock at most by its limit", () => {
    expect(creditStall({ lastProgress: 1000, stalledMs: 0 }, 12_000, 13_250, 90_000)).toEqual({
      lastProgress: 13_000,
      stalledMs: 12_000,
    });
    expect(creditStall({ lastProgress: 5000, stalledMs: 0 }, 12_000, 13_250, 90_000).lastProgress).toBe(
      13_250,
    );
    expect(creditStall({ lastProgress: 0, stalledMs: 80_000 }, 30_000, 1, 90_000).stalledMs).toBe(90_000);
  });

  it("after a 12 s stop with an 8 s idle limit, the verdict on the next tick is no idle timeout", () => {
    const limits = { wallClockMs: 90_000, idleMs: 8_000 };
    const before = { tStart: 0, lastProgress: 1_000 };
    const now = 13_250;
    // as it was: the stop reads as the agent's silence
    expect(watchdogVerdict({ now, ...before, limits, runningCommand: "x", lastError: undefined })?.kind).toBe(
      "timeout",
    );
    const c = creditStall(
      { lastProgress: before.lastProgress, stalledMs: 0 },
      watchdogStallMs(1_000, now, 250),
      now,
      90_000,
    );
    expect(
      watchdogVerdict({
        now: now + 250 - c.stalledMs,
        tStart: 0,
        lastProgress: c.lastProgress - c.stalledMs,
        limits,
        runningCommand: "x",
        lastError: undefined,
      }),
    ).toBeUndefined();
  });
});
