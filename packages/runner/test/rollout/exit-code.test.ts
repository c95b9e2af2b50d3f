import { describe, expect, it } from "vitest";
import { PENDING_EXIT, rolloutExitCode } from "../../src/rollout/exit-code.js";
import { countOutcomes, type RunSummary, summarizeTask } from "../../src/rollout/summary.js";
import type { Outcome } from "../../src/run-format/schema.js";
import { result } from "./fixtures.js";

const policyError: Outcome = { kind: "policy_error", detail: "the model server answered 500" };
const memory: Outcome = {
  kind: "limits_exceeded",
  limit: "memory",
  detail: "the worker hit its memory limit",
};

function summaryOf(results: ReturnType<typeof result>[], over: Partial<RunSummary> = {}): RunSummary {
  const { outcomes, limits } = countOutcomes(results);
  return {
    runId: "r",
    out: "runs/r",
    complete: true,
    interrupted: false,
    durationMs: 1,
    trajectories: { expected: results.length, finished: results.length, infraRetries: 0, outcomes, limits },
    meanReward: null,
    tasks: [summarizeTask("a", results.length, results, "written", "off")],
    ...over,
  };
}

describe("rolloutExitCode", () => {
  it("0 when data was produced, limits and some policy failures included", () => {
    const s = summaryOf([
      result({ taskId: "a", index: 0, reward: 0, outcome: memory }),
      result({ taskId: "a", index: 1, reward: 0, outcome: policyError }),
      result({ taskId: "a", index: 2, reward: 1 }),
    ]);
    expect(rolloutExitCode(s, false)).toEqual({ code: 0 });
  });

  it("1 when every trajectory failed on the policy", () => {
    const s = summaryOf([
      result({ taskId: "a", index: 0, reward: 0, outcome: policyError }),
      result({ taskId: "a", index: 1, reward: 0, outcome: policyError }),
    ]);
    const e = rolloutExitCode(s, false);
    expect(e.code).toBe(1);
    expect(e.why).toMatch(/every trajectory \(2\) ended in policy_error/);
  });

  it("1 for infra_error after retries, for a task that could not run, and for gold below 1 when validating", () => {
    expect(
      rolloutExitCode(summaryOf([result({ taskId: "a", index: 0, reward: null })]), false),
    ).toMatchObject({
      code: 1,
      why: expect.stringMatching(/1 trajectory ended in infra_error/),
    });
    const broken = summaryOf([]);
    broken.tasks[0] = { ...broken.tasks[0]!, error: { code: "E_SNAPSHOT", message: "build failed" } };
    expect(rolloutExitCode(broken, false)).toMatchObject({ code: 1, why: expect.stringContaining("a") });
    const half = summaryOf([result({ taskId: "a", index: 0, reward: 0.5 })]);
    expect(rolloutExitCode(half, false).code).toBe(0);
    expect(rolloutExitCode(half, true)).toMatchObject({ code: 1, why: expect.stringMatching(/gold policy/) });
  });

  it("130 when interrupted, before anything else", () => {
    const s = summaryOf([result({ taskId: "a", index: 0, reward: null })], { interrupted: true });
    expect(rolloutExitCode(s, true)).toEqual({ code: 130, why: "interrupted" });
  });

  it("an empty run (nothing finished) is not 'every trajectory failed on the policy'", () => {
    expect(rolloutExitCode(summaryOf([]), false).code).toBe(0);
  });
});

describe("rolloutExitCode: Atropos", () => {
  const withAtropos = (atropos?: RunSummary["atropos"]): RunSummary => ({
    runId: "r",
    out: "runs/r",
    complete: true,
    interrupted: false,
    durationMs: 1,
    trajectories: {
      expected: 2,
      finished: 2,
      infraRetries: 0,
      outcomes: {
        completed: 2,
        limits_exceeded: 0,
        timeout: 0,
        policy_error: 0,
        agent_error: 0,
        infra_error: 0,
      },
      limits: {},
    },
    meanReward: 0.5,
    tasks: [],
    ...(atropos ? { atropos } : {}),
  });

  it("is 75 (EX_TEMPFAIL) while groups are pending, naming the resume command", () => {
    const exit = rolloutExitCode(withAtropos({ sent: 1, dropped: 0, pending: 2 }), false);
    expect(exit.code).toBe(PENDING_EXIT);
    expect(PENDING_EXIT).toBe(75);
    expect(exit.why).toBe(
      "2 group(s) not sent to Atropos yet; finish with: flakegym rollout --resume runs/r",
    );
  });
  it("is 0 once every group was sent or dropped", () => {
    expect(rolloutExitCode(withAtropos({ sent: 1, dropped: 1, pending: 0 }), false)).toEqual({ code: 0 });
    expect(rolloutExitCode(withAtropos(), false)).toEqual({ code: 0 });
  });
});
