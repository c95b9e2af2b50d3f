import { describe, expect, it } from "vitest";
import {
  countOutcomes,
  renderSummary,
  runDurationMs,
  runSummaryOf,
  stoppedOf,
  summarizeTask,
} from "../../src/rollout/summary.js";
import type { Outcome } from "../../src/run-format/schema.js";
import { result } from "./fixtures.js";

const disk: Outcome = { kind: "limits_exceeded", limit: "disk", detail: "the worker hit its disk limit" };
const wall: Outcome = { kind: "timeout", limit: "wall_clock", detail: "ran 1200 s" };

describe("countOutcomes", () => {
  it("counts every kind (0 when none) and each limit hit", () => {
    const rs = [
      result({ taskId: "a", index: 0, outcome: disk, reward: 0 }),
      result({ taskId: "a", index: 1, outcome: disk, reward: 0 }),
      result({ taskId: "a", index: 2, outcome: wall, reward: 0 }),
      result({ taskId: "a", index: 3 }),
    ];
    expect(countOutcomes(rs)).toEqual({
      outcomes: {
        completed: 1,
        limits_exceeded: 2,
        timeout: 1,
        policy_error: 0,
        agent_error: 0,
        infra_error: 0,
      },
      limits: { disk: 2, wall_clock: 1 },
    });
  });
});

describe("summarizeTask", () => {
  it("lists every trajectory's reason by index; a limit keeps its reward in the group", () => {
    const t = summarizeTask(
      "a",
      2,
      [result({ taskId: "a", index: 1 }), result({ taskId: "a", index: 0, outcome: disk, reward: 0 })],
      "written",
      "off",
    );
    expect(t.rewards).toEqual([0, 1]);
    expect(t.reasons).toEqual([
      { trajectoryId: "a-t0", index: 0, kind: "limits_exceeded", limit: "disk", detail: disk.detail },
      { trajectoryId: "a-t1", index: 1, kind: "completed", detail: "done" },
    ]);
  });
});

describe("runDurationMs", () => {
  it("adds a resume's time only when it did something", () => {
    expect(runDurationMs(undefined, 500, true)).toBe(500);
    expect(runDurationMs(undefined, 500, false)).toBe(500);
    expect(runDurationMs(10_000, 500, true)).toBe(10_500);
    expect(runDurationMs(10_000, 500, false)).toBe(10_000);
  });
});

describe("renderSummary", () => {
  it("prints the limits that ended trajectories", () => {
    const rs = [result({ taskId: "a", index: 0, outcome: disk, reward: 0 })];
    const { outcomes, limits } = countOutcomes(rs);
    const lines = renderSummary({
      runId: "r",
      out: "o",
      complete: true,
      interrupted: false,
      durationMs: 1000,
      trajectories: { expected: 1, finished: 1, infraRetries: 0, outcomes, limits },
      meanReward: 0,
      tasks: [summarizeTask("a", 1, rs, "written", "off")],
    });
    expect(lines).toContain("ended by a limit: disk:1");
  });
});

describe("runSummaryOf", () => {
  const base = {
    runId: "RUN",
    out: "runs/RUN",
    tasks: ["a", "b"],
    groupSize: 2,
    expected: 4,
    atroposOf: () => "off" as const,
    sendsToAtropos: false,
    taskErrors: new Map(),
    interrupted: false,
    durationMs: 10,
  };

  it("is complete when every trajectory finished and every group was written", () => {
    const rs = [
      result({ taskId: "a", index: 0, reward: 1 }),
      result({ taskId: "a", index: 1, reward: 0 }),
      result({ taskId: "b", index: 0, reward: 0.5 }),
      result({ taskId: "b", index: 1, reward: null, infraRetries: [{ attempt: 1, detail: "x", at: "t" }] }),
    ];
    const s = runSummaryOf({ ...base, results: rs, groupsWritten: new Set(["a", "b"]) });
    expect(s.complete).toBe(true);
    expect(s.meanReward).toBe(0.5);
    expect(s.trajectories).toMatchObject({ expected: 4, finished: 4, infraRetries: 1 });
    expect(s.tasks.map((t) => t.group)).toEqual(["written", "written"]);
    expect(s).not.toHaveProperty("atropos");
    expect(runSummaryOf({ ...base, results: rs, groupsWritten: new Set(["a"]) }).complete).toBe(false);
  });

  it("counts Atropos groups, a pending one only when its group was written; names a task's error", () => {
    const atropos = { a: "sent", b: "pending" } as const;
    const s = runSummaryOf({
      ...base,
      results: [result({ taskId: "a", index: 0 }), result({ taskId: "a", index: 1 })],
      groupsWritten: new Set(["a"]),
      atroposOf: (t) => atropos[t as "a" | "b"],
      sendsToAtropos: true,
      taskErrors: new Map([["b", { code: "E_SNAPSHOT", message: "build failed" }]]),
    });
    expect(s.atropos).toEqual({ sent: 1, dropped: 0, pending: 0 });
    expect(s.meanReward).toBe(1);
    expect(s.tasks[1]?.error).toEqual({ code: "E_SNAPSHOT", message: "build failed" });
    expect(s.complete).toBe(false);
  });
});

describe("stoppedOf", () => {
  it("a full disk (or an unwritable file) stops the run as a whole; other task failures do not", () => {
    const full = { code: "E_DISK_FULL", message: "no space left on the device to write /r/metrics.jsonl" };
    expect(stoppedOf(new Map([["a", { code: "E_TASK", message: "x" }]]))).toBeUndefined();
    expect(
      stoppedOf(
        new Map([
          ["a", { code: "E_TASK", message: "x" }],
          ["b", full],
        ]),
      ),
    ).toEqual(full);
  });
});
