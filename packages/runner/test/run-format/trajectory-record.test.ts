import { describe, expect, it } from "vitest";
import { ServedTrajectory } from "../../src/export/served-record.js";
import { MetricsLine, TrajectoryResult } from "../../src/run-format/schema.js";
import {
  atroposOverrideOf,
  indexOfTrajectoryId,
  infraRetryCount,
  metricsLineOf,
  servedResultOf,
  TrajectoryRow,
  viewRowOf,
} from "../../src/run-format/trajectory-record.js";
import { result } from "../rollout/fixtures.js";

const retried = result({
  taskId: "a",
  index: 3,
  policy: "scripted:plan.json",
  infraRetries: [
    { attempt: 1, detail: "boot failed", at: "2026-11-21T00:00:00.000Z" },
    { attempt: 2, detail: "worker crashed", at: "2026-11-21T00:00:01.000Z" },
  ],
  outcome: { kind: "timeout", limit: "wall_clock", detail: "ran 1200 s" },
  clineTaskId: "cline-9",
});

describe("one trajectory record, every derived shape by one pure conversion", () => {
  it("the fixture is a valid result.json", () => {
    expect(TrajectoryResult.parse(retried)).toEqual(retried);
  });

  it("retries: a list in the record, the same count in the metrics line, the row, the served record and the Atropos override", () => {
    expect(infraRetryCount(retried)).toBe(2);
    const line = MetricsLine.parse(metricsLineOf(retried));
    expect(line.infra_retries).toBe(2);
    expect(TrajectoryRow.parse(viewRowOf(line, ["gold"])).infraRetries).toBe(2);
    expect(servedResultOf(retried).infra_retries).toBe(2);
    expect(atroposOverrideOf(retried, undefined).infra_retries).toBe(2);
    expect(infraRetryCount(result({ taskId: "a", index: 0 }))).toBe(0);
  });

  it("the viewer's row: its index from the id, its policy from run.json's list, the limit and tampered count", () => {
    const line = metricsLineOf({
      ...retried,
      score: { ...retried.score!, tampered: ["Makefile", "setup.py"] },
    });
    expect(viewRowOf(line, ["gold", "empty"])).toEqual({
      id: "a-t3",
      task: "a",
      index: 3,
      policy: "empty",
      outcome: "timeout",
      limit: "wall_clock",
      detail: "ran 1200 s",
      reward: 1,
      turns: 2,
      tokensIn: 100,
      tokensOut: 20,
      timings: { snapshot: 1, fork: 2, boot: 3, agent: 4, score: 5 },
      infraRetries: 2,
      tampered: 2,
    });
    expect(viewRowOf({ ...line, trajectory_id: "odd" }, ["gold"])).toMatchObject({
      index: null,
      policy: null,
    });
    expect(viewRowOf(line, [])).toMatchObject({ index: 3, policy: null });
    expect(indexOfTrajectoryId("run-x-t12")).toBe(12);
    expect(indexOfTrajectoryId("t12")).toBeNull();
  });

  it("the served record's result fields, which the full record schema accepts", () => {
    const fields = servedResultOf(retried);
    expect(fields).toMatchObject({
      trajectory_id: "a-t3",
      task_id: "a",
      index: 3,
      outcome: retried.outcome,
      reward_breakdown: { terms: [{ name: "tests", weight: 1, value: 1 }] },
      timings_ms: { snapshot: 1, fork: 2, boot: 3, agent: 4, score: 5 },
      turns: 2,
      prompt: "fix it",
    });
    const record = {
      type: "trajectory",
      run_id: "r",
      ...fields,
      segments: [],
      skipped_calls: [],
      provenance: {},
    };
    expect(ServedTrajectory.parse(record)).toEqual(record);
    expect(servedResultOf({ ...retried, score: null, reward: null }).reward_breakdown).toBeNull();
  });

  it("the Atropos override: outcome kind and detail, score breakdown, task id and sampling only when known", () => {
    const o = atroposOverrideOf(retried, { temperature: 0.5 });
    expect(o).toEqual({
      trajectory_id: "a-t3",
      index: 3,
      policy: "scripted:plan.json",
      outcome: "timeout",
      outcome_detail: "ran 1200 s",
      reward: 1,
      score: { terms: retried.score!.terms, touched_test_files: [] },
      infra_retries: 2,
      cline_task_id: "cline-9",
      generation_params: { temperature: 0.5 },
    });
    const { clineTaskId: _, ...withoutTask } = retried;
    const bare = atroposOverrideOf({ ...withoutTask, score: null }, undefined);
    expect(bare).not.toHaveProperty("cline_task_id");
    expect(bare).not.toHaveProperty("generation_params");
    expect(bare.score).toBeNull();
  });
});
