import { describe, expect, it } from "vitest";
import { CANCELLED, cancelledByDelete, groupStartOf, trajectoryErrorLineOf } from "../../src/serve/groups.js";

describe("groupStartOf", () => {
  it("a new request: a fresh run id, its request written, nothing resumed", () => {
    expect(groupStartOf(undefined, () => "r-new")).toEqual({
      resume: false,
      runId: "r-new",
      writeRequest: true,
      clearVerdict: false,
    });
  });

  it("a stored run resumes under its own id; a failed verdict is cleared, a stored request kept", () => {
    const newId = () => {
      throw new Error("a stored run must not get a new id");
    };
    expect(
      groupStartOf(
        {
          runId: "r-1",
          done: { type: "done", request_id: "q", status: "failed", trajectories: 0, expected: 2 },
        },
        newId,
      ),
    ).toEqual({ resume: true, runId: "r-1", writeRequest: false, clearVerdict: true });
    expect(groupStartOf({ runId: "r-1", done: undefined }, newId)).toMatchObject({ clearVerdict: false });
  });

  it("stored without a run (it never got to its rollout): a new run id, the stored request kept", () => {
    expect(groupStartOf({ runId: undefined, done: undefined }, () => "r-2")).toEqual({
      resume: false,
      runId: "r-2",
      writeRequest: false,
      clearVerdict: false,
    });
  });
});

describe("trajectoryErrorLineOf", () => {
  it("names the run, trajectory, task, index and the error's message", () => {
    expect(
      trajectoryErrorLineOf(
        "r-1",
        { trajectoryId: "t-3", taskId: "task-a", index: 3 },
        new Error("no tokens"),
      ),
    ).toEqual({
      type: "trajectory_error",
      run_id: "r-1",
      trajectory_id: "t-3",
      task_id: "task-a",
      index: 3,
      reason: "no tokens",
    });
    expect(trajectoryErrorLineOf("r", { trajectoryId: "t", taskId: "k", index: 0 }, "plain").reason).toBe(
      "plain",
    );
  });
});

describe("cancelledByDelete", () => {
  it("only DELETE's reason counts as a cancel; the server closing is not one", () => {
    const del = new AbortController();
    del.abort(CANCELLED);
    const closing = new AbortController();
    closing.abort("server closing");
    expect(cancelledByDelete(del.signal)).toBe(true);
    expect(cancelledByDelete(closing.signal)).toBe(false);
    expect(cancelledByDelete(new AbortController().signal)).toBe(false);
  });
});
