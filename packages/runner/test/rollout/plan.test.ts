import { describe, expect, it } from "vitest";
import { planRun, policyFor, trajectoryId, trialOf } from "../../src/rollout/plan.js";
import type { RunState } from "../../src/run-format/run-dir.js";
import { result } from "./fixtures.js";

const empty: RunState = {
  results: new Map(),
  partial: [],
  metricsIds: new Set(),
  samplesIds: new Set(),
  groupTasks: new Set(),
  badLines: [],
};
const cfg = { tasks: ["a", "b"], groupSize: 3, policies: ["gold", "empty"] };

describe("planRun", () => {
  it("plans every trajectory of a fresh run, policies assigned round-robin", () => {
    const plan = planRun(cfg, empty);
    expect(plan.toRun.map((s) => `${s.trajectoryId}:${s.policy}`)).toEqual([
      "a-t0:gold",
      "a-t1:empty",
      "a-t2:gold",
      "b-t0:gold",
      "b-t1:empty",
      "b-t2:gold",
    ]);
    expect(plan.clean).toEqual([]);
    expect(plan.groupsMissing).toEqual([]);
  });

  it("resumes: skips finished trajectories, cleans partial ones, and fills lines a kill left out", () => {
    const done = [
      result({ taskId: "a", index: 0 }),
      result({ taskId: "a", index: 1, reward: null }),
      result({ taskId: "a", index: 2 }),
    ];
    const state: RunState = {
      results: new Map(done.map((r) => [r.trajectoryId, r])),
      partial: ["b-t1", "stray-dir"],
      metricsIds: new Set(["a-t0", "a-t1"]),
      samplesIds: new Set(["a-t0"]),
      groupTasks: new Set(),
      badLines: [],
    };
    const plan = planRun(cfg, state);
    expect(plan.toRun.map((s) => s.trajectoryId)).toEqual(["b-t0", "b-t1", "b-t2"]);
    expect(plan.clean).toEqual(["b-t1"]); // only our own ids are deleted
    expect(plan.metricsMissing).toEqual(["a-t2"]);
    expect(plan.samplesMissing).toEqual(["a-t2"]); // a-t1 has no reward: no sample
    expect(plan.groupsMissing).toEqual(["a"]);
    expect(plan.tasksDone).toEqual([]);
  });

  it("a finished run plans nothing", () => {
    const all = ["a", "b"].flatMap((t) => [0, 1, 2].map((i) => result({ taskId: t, index: i })));
    const ids = new Set(all.map((r) => r.trajectoryId));
    const plan = planRun(cfg, {
      results: new Map(all.map((r) => [r.trajectoryId, r])),
      partial: [],
      metricsIds: ids,
      samplesIds: ids,
      groupTasks: new Set(["a", "b"]),
      badLines: [],
    });
    expect(plan.toRun).toEqual([]);
    expect(plan.metricsMissing).toEqual([]);
    expect(plan.groupsMissing).toEqual([]);
    expect(plan.tasksDone).toEqual(["a", "b"]);
  });

  it("ids and policy assignment are stable", () => {
    expect(trajectoryId("ratatui-2148", 7)).toBe("ratatui-2148-t7");
    expect(policyFor(["x"], 5)).toBe("x");
    expect(policyFor(["x", "y", "z"], 4)).toBe("y");
    // trajectory 4 of [x, y, z] is y's second trajectory: trial 1
    expect(trialOf(["x", "y", "z"], 4)).toBe(1);
    expect(trialOf(["x"], 5)).toBe(5);
  });
});
