import { describe, expect, it } from "vitest";
import { frozenExitOf, HEARTBEAT_LOST_MS } from "../../src/workers/frozen-verdict.js";

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
