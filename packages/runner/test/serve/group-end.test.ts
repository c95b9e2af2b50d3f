import { describe, expect, it } from "vitest";
import { type GroupEndInput, groupEndOf } from "../../src/serve/group-end.js";

const base: GroupEndInput = {
  cancelled: false,
  rolloutComplete: true,
  expected: 4,
  records: 4,
  failures: [],
};

describe("groupEndOf", () => {
  it("complete only when the rollout completed and every trajectory has its record", () => {
    expect(groupEndOf(base)).toEqual({ status: "complete" });
  });

  it("a trajectory whose record failed: failed (resumable), never complete, and it says which and why", () => {
    const end = groupEndOf({
      ...base,
      records: 3,
      failures: [{ trajectory_id: "t-2", reason: "token_ids must be a non-empty array of integers" }],
    });
    expect(end.status).toBe("failed");
    expect(end.detail).toBe(
      "3 of 4 trajectories have a record; 1 finished without one (t-2: token_ids must be a non-empty array of integers); resubmit to retry them",
    );
  });

  it("records missing for any other reason: failed", () => {
    expect(groupEndOf({ ...base, records: 0 })).toEqual({
      status: "failed",
      detail: "0 of 4 trajectories have a record; resubmit to retry the rest",
    });
    expect(groupEndOf({ ...base, rolloutComplete: false })).toEqual({
      status: "failed",
      detail: "the group did not complete",
    });
  });

  it("cancelled, stopped, thrown and task errors come first, in that order", () => {
    expect(groupEndOf({ ...base, cancelled: true, aborted: "cancelled by DELETE" }).status).toBe("cancelled");
    expect(groupEndOf({ ...base, aborted: "server closing" })).toEqual({
      status: "failed",
      detail: "server closing",
    });
    expect(groupEndOf({ ...base, thrown: "no snapshot" })).toEqual({
      status: "failed",
      detail: "no snapshot",
    });
    expect(groupEndOf({ ...base, taskError: { code: "E_TASK", message: "boom" } })).toEqual({
      status: "failed",
      detail: "E_TASK: boom",
    });
  });

  it("lists at most three failures", () => {
    const failures = [1, 2, 3, 4, 5].map((i) => ({ trajectory_id: `t-${i}`, reason: "r" }));
    expect(groupEndOf({ ...base, expected: 5, records: 0, failures }).detail).toMatch(/t-3: r; and 2 more\)/);
  });
});
