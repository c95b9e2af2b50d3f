import type { TrajectoryResult } from "../../src/run-format/schema.js";

/** A finished trajectory result with the fields tests care about. */
export function result(
  over: Partial<TrajectoryResult> & Pick<TrajectoryResult, "taskId" | "index">,
): TrajectoryResult {
  const reward = over.reward === undefined ? 1 : over.reward;
  return {
    trajectoryId: `${over.taskId}-t${over.index}`,
    policy: "gold",
    outcome: {
      kind: reward === null ? "infra_error" : "completed",
      detail: reward === null ? "worker crashed" : "done",
    },
    reward,
    score:
      reward === null
        ? null
        : {
            reward,
            terms: [{ name: "tests", weight: 1, value: reward }],
            flaky: [],
            touchedTestFiles: [],
            diffBytes: 10,
            durationMs: 5,
          },
    timings: { snapshotMs: 1, forkMs: 2, bootMs: 3, agentMs: 4, scoreMs: 5 },
    counts: { turns: 2, tokensIn: 100, tokensOut: 20 },
    bootOk: true,
    infraRetries: [],
    prompt: "fix it",
    finishedAt: "2026-11-21T00:00:00.000Z",
    ...over,
  };
}
