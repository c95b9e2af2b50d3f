import { describe, expect, it } from "vitest";
import {
  DEADLINE_LOST_MS,
  frozenExitOf,
  HEARTBEAT_LOST_MS,
  wallClockExitOf,
} from "../../src/workers/frozen-verdict.js";

const outside = "its bwrap (pid 7, outside the sandbox's pid namespace) is stopped (state T)";

describe("frozenExitOf: who could reach the frozen process decides", () => {
  it.each([
    ["heartbeats come: alive, whatever the agent does", { heartbeatAgeMs: 900, outsideFreeze: outside }],
    ["no heartbeat yet (still starting)", { heartbeatAgeMs: undefined, outsideFreeze: outside }],
    [
      "a heartbeat just late (a loaded machine)",
      { heartbeatAgeMs: HEARTBEAT_LOST_MS, outsideFreeze: outside },
    ],
    // the agent's own commands can stop the supervisor: no evidence of anything outside
    [
      "no heartbeat, nothing out of the agent's reach stopped",
      { heartbeatAgeMs: 60_000, outsideFreeze: undefined },
    ],
  ])("%s: not frozen (the agent's clocks decide)", (_, e) => {
    expect(frozenExitOf(e)).toBeUndefined();
  });

  it("no heartbeat and a stop out of the agent's reach: frozen, naming both", () => {
    const exit = frozenExitOf({ heartbeatAgeMs: 12_400, outsideFreeze: outside });
    expect(exit).toEqual({
      reason: "frozen",
      detail: `frozen from outside its sandbox: no heartbeat from its supervisor for 12 s and ${outside}, which no code inside can do`,
    });
  });

  it("the bound is a parameter", () => {
    expect(frozenExitOf({ heartbeatAgeMs: 2_500, outsideFreeze: outside }, 2_000)?.reason).toBe("frozen");
  });
});

describe("a stop within the agent's reach (one user): cannot be told from theirs", () => {
  const inside = "its supervisor (pid 9) is stopped (state T)";
  it("no heartbeat and the supervisor stopped on one user: ends now, frozen within reach, saying why", () => {
    const exit = frozenExitOf({ heartbeatAgeMs: 6_000, outsideFreeze: undefined, insideStop: inside });
    expect(exit).toMatchObject({ reason: "frozen", withinReach: true });
    expect(exit?.detail).toContain(inside);
    expect(exit?.detail).toMatch(/cannot be told from theirs/);
  });
  it("a stop from outside outweighs it; heartbeats coming mean alive", () => {
    expect(
      frozenExitOf({ heartbeatAgeMs: 6_000, outsideFreeze: outside, insideStop: inside }),
    ).not.toHaveProperty("withinReach");
    expect(
      frozenExitOf({ heartbeatAgeMs: 800, outsideFreeze: undefined, insideStop: inside }),
    ).toBeUndefined();
  });
});

describe("wallClockExitOf: a freeze in the wall clock's last seconds", () => {
  it("a stop from outside seen at the wall clock, the heartbeat a beat and a half late: frozen, not the agent's timeout", () => {
    const exit = wallClockExitOf({ heartbeatAgeMs: DEADLINE_LOST_MS + 500, outsideFreeze: outside }, 60_000);
    expect(exit.reason).toBe("frozen");
    expect(exit.detail).toMatch(/wall clock of 60000 ms ran out/);
  });
  it.each([
    ["nothing stopped", { heartbeatAgeMs: 3_000, outsideFreeze: undefined }],
    ["beats still coming (stopped in the last instant)", { heartbeatAgeMs: 900, outsideFreeze: outside }],
    [
      "only a stop within the agent's reach",
      {
        heartbeatAgeMs: 9_000,
        outsideFreeze: undefined,
        insideStop: "its supervisor (pid 9) is stopped (state T)",
      },
    ],
  ])("%s: the wall clock", (_, e) => {
    expect(wallClockExitOf(e, 60_000)).toEqual({ reason: "wall_clock", detail: "wall clock limit 60000 ms" });
  });
});
