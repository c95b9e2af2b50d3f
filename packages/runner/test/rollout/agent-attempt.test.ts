import { describe, expect, it } from "vitest";
import type { TrajectoryStatus } from "../../src/gateway/types.js";
import { parsePolicySpec } from "../../src/policy/spec.js";
import {
  attemptCountsOf,
  bootDetailOf,
  driverLimitsOf,
  modelIdOf,
  routeLimitsOf,
  SCRIPTED_MODEL_ID,
  uncollectedOutcome,
} from "../../src/rollout/agent-attempt.js";

const limits = { maxTurns: 30, timeoutMs: 600_000, testTimeoutMs: 120_000 };

describe("the agent attempt's decisions", () => {
  it("configures the core with the model's id, or the scripted one for plan-replaying policies", () => {
    expect(modelIdOf(parsePolicySpec("openai:http://127.0.0.1:8000/v1#qwen3"))).toBe("qwen3");
    expect(modelIdOf(parsePolicySpec("anthropic:http://127.0.0.1:8000#claude"))).toBe("claude");
    expect(modelIdOf(parsePolicySpec("gold"))).toBe(SCRIPTED_MODEL_ID);
    expect(modelIdOf(parsePolicySpec("empty"))).toBe(SCRIPTED_MODEL_ID);
  });

  it("gives the gateway the turn budget, the trajectory's end, and its watchdog only when --model-silence is set", () => {
    expect(routeLimitsOf(limits, 1_000)).toEqual({ maxRequests: 30, deadlineAt: 601_000 });
    expect(routeLimitsOf({ ...limits, modelSilenceMs: 9000 }, 1_000)).toEqual({
      maxRequests: 30,
      deadlineAt: 601_000,
      silenceTimeoutMs: 9000,
    });
  });

  it("gives the driver the wall clock and turn budget, and the idle limit only when set", () => {
    expect(driverLimitsOf(limits)).toEqual({ wallClockMs: 600_000, maxModelRequests: 30 });
    expect(driverLimitsOf({ ...limits, idleMs: 5000 })).toEqual({
      wallClockMs: 600_000,
      maxModelRequests: 30,
      idleMs: 5000,
    });
  });

  it("says how the worker came up when the backend knows", () => {
    expect(bootDetailOf(true)).toBe("pooled worker");
    expect(bootDetailOf(false)).toBe("cold boot");
    expect(bootDetailOf(undefined)).toBeUndefined();
  });

  it("counts from the gateway's route, else the driver's requests with no tokens", () => {
    const status = { ok: 4, promptTokens: 1200, completionTokens: 80 } as TrajectoryStatus;
    expect(attemptCountsOf(status, 6)).toEqual({ turns: 4, tokensIn: 1200, tokensOut: 80 });
    expect(attemptCountsOf(undefined, 6)).toEqual({ turns: 6, tokensIn: 0, tokensOut: 0 });
  });

  it("keeps a trajectory a limit ended as data when its artifacts cannot be read, saying so", () => {
    const limit = { kind: "limits_exceeded" as const, limit: "wall_clock" as const, detail: "10 min" };
    expect(uncollectedOutcome(limit, "worker gone", false)).toEqual({
      ...limit,
      detail: "10 min; artifacts not collected: worker gone",
    });
  });

  it("fails the attempt (retried) when the outcome was an infra fault or the run was aborted", () => {
    expect(uncollectedOutcome({ kind: "infra_error", detail: "x" }, "gone", false)).toBeUndefined();
    expect(uncollectedOutcome({ kind: "completed", detail: "done" }, "gone", true)).toBeUndefined();
  });
});
