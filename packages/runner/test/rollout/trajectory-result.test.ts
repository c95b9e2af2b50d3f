import { describe, expect, it } from "vitest";
import type { AgentAttempt, RolloutTask } from "../../src/rollout/deps.js";
import {
  infraOutcomeOf,
  notCompletedDetailOf,
  scoredOutcomeOf,
  trajectoryResultOf,
} from "../../src/rollout/trajectory-result.js";
import type { Outcome } from "../../src/run-format/schema.js";
import { metricsLineOf } from "../../src/run-format/trajectory-record.js";
import { result } from "./fixtures.js";

const slot = { taskId: "a", index: 1, trajectoryId: "a-t1", policy: "gold" };
const task: RolloutTask = {
  id: "a",
  rowId: "a/task.json",
  profile: "python",
  prompt: "fix it",
  network: "none",
  hidden: { testFiles: [], commands: [], timeoutMs: 1000 },
};
const done: Outcome = { kind: "completed", detail: "done" };
const attempt: AgentAttempt = {
  outcome: done,
  clineTaskId: "cline-1",
  bootOk: true,
  pooledWorker: true,
  forkMs: 2,
  bootMs: 3,
  agentMs: 4,
  counts: { turns: 5, tokensIn: 60, tokensOut: 7 },
  diff: "",
};
const score = result({ taskId: "a", index: 1 }).score!;

describe("trajectoryResultOf", () => {
  it("takes the timings, counts and worker facts from the attempt and the reward from the score", () => {
    const r = trajectoryResultOf({
      slot,
      task,
      attempt,
      outcome: done,
      score,
      snapshotMs: 1,
      retries: [],
      finishedAt: "2026-11-21T00:00:00.000Z",
    });
    expect(r).toEqual({
      trajectoryId: "a-t1",
      taskId: "a",
      index: 1,
      policy: "gold",
      outcome: done,
      reward: score.reward,
      score,
      timings: { snapshotMs: 1, forkMs: 2, bootMs: 3, agentMs: 4, scoreMs: score.durationMs },
      counts: attempt.counts,
      bootOk: true,
      pooledWorker: true,
      infraRetries: [],
      clineTaskId: "cline-1",
      prompt: "fix it",
      finishedAt: "2026-11-21T00:00:00.000Z",
    });
  });

  it("without an attempt or a score: no reward, zero timings and counts, not booted", () => {
    const retries = [{ attempt: 1, detail: "boot failed", at: "2026-11-21T00:00:00.000Z" }];
    const r = trajectoryResultOf({
      slot,
      task,
      attempt: undefined,
      outcome: infraOutcomeOf("boot failed", 1),
      score: null,
      snapshotMs: 9,
      retries,
      finishedAt: "2026-11-21T00:00:00.000Z",
    });
    expect(r.reward).toBeNull();
    expect(r.timings).toEqual({ snapshotMs: 9, forkMs: 0, bootMs: 0, agentMs: 0, scoreMs: 0 });
    expect(r.counts).toEqual({ turns: 0, tokensIn: 0, tokensOut: 0 });
    expect(r.bootOk).toBe(false);
    expect(r).not.toHaveProperty("pooledWorker");
    expect(r).not.toHaveProperty("clineTaskId");
    expect(r.infraRetries).toBe(retries);
  });
});

describe("metricsLineOf", () => {
  it("names the limit and the tampered files only when there are some", () => {
    const limited = result({
      taskId: "a",
      index: 0,
      outcome: { kind: "limits_exceeded", limit: "disk", detail: "full" },
      pooledWorker: false,
    });
    expect(metricsLineOf(limited)).toMatchObject({
      task_id: "a",
      trajectory_id: "a-t0",
      outcome: "limits_exceeded",
      limit: "disk",
      outcome_detail: "full",
      pooled_worker: false,
      infra_retries: 0,
    });
    const plain = metricsLineOf(result({ taskId: "a", index: 1 }));
    expect(plain).not.toHaveProperty("limit");
    expect(plain).not.toHaveProperty("tampered");
    expect(plain).not.toHaveProperty("pooled_worker");
    expect(plain).not.toHaveProperty("boot_cpu_s");
    expect(plain).not.toHaveProperty("runner_cpu_s");
  });

  it("carries each phase's CPU from the attempt, the score and the runner's share", () => {
    const r = trajectoryResultOf({
      slot,
      task,
      attempt: { ...attempt, bootCpuS: 4.2, agentCpuS: 1.1 },
      outcome: done,
      score: { ...score, cpuS: 0.7 },
      snapshotMs: 1,
      retries: [],
      finishedAt: "2026-11-21T00:00:00.000Z",
      runnerCpuS: 0.3,
    });
    expect(r.timings).toMatchObject({ bootCpuS: 4.2, agentCpuS: 1.1, scoreCpuS: 0.7, runnerCpuS: 0.3 });
    expect(metricsLineOf(r)).toMatchObject({
      boot_cpu_s: 4.2,
      agent_cpu_s: 1.1,
      score_cpu_s: 0.7,
      runner_cpu_s: 0.3,
    });
  });
});

describe("a trajectory's outcome", () => {
  it("after infra failures says how many attempts it took", () => {
    expect(infraOutcomeOf("boot failed", 0)).toEqual({
      kind: "infra_error",
      detail: "boot failed (after 1 attempt)",
    });
    expect(infraOutcomeOf("boot failed", 2).detail).toBe("boot failed (after 3 attempts)");
  });

  it("is the agent's when scored, else an infra error naming the scoring failure and the agent's outcome", () => {
    expect(scoredOutcomeOf(done, score, "")).toBe(done);
    expect(scoredOutcomeOf(done, null, "worker lost")).toEqual({
      kind: "infra_error",
      detail: "scoring failed: worker lost (agent outcome: completed)",
    });
  });

  it("says why it did not complete, the limit named", () => {
    expect(notCompletedDetailOf(done)).toBeUndefined();
    expect(notCompletedDetailOf({ kind: "timeout", limit: "wall_clock", detail: "ran 1200 s" })).toBe(
      "wall_clock: ran 1200 s",
    );
    expect(notCompletedDetailOf({ kind: "agent_error", detail: "gave up" })).toBe("gave up");
  });
});
