import type { Allocation, Evaluation } from "@flakegym/nomad-jobs";
import { describe, expect, it } from "vitest";
import {
  allocationError,
  describePlacement,
  describeTaskEvents,
  exitCodeOf,
  killedByNomad,
  unseenEvents,
} from "../../../src/workers/nomad/allocation.js";

const ev = (Type: string, extra: Record<string, unknown> = {}) => ({ Type, Time: 1, Details: {}, ...extra });

function alloc(over: Partial<Allocation>): Allocation {
  return {
    ID: "a1b2c3d4-0000",
    JobID: "job",
    ClientStatus: "failed",
    ClientDescription: "Failed tasks",
    NodeName: "client-7",
    TaskStates: {},
    CreateIndex: 1,
    ModifyIndex: 2,
    ...over,
  } as Allocation;
}

describe("reading allocations", () => {
  it("task events become readable lines", () => {
    const a = alloc({
      TaskStates: {
        worker: {
          State: "dead",
          Events: [
            ev("Received", { DisplayMessage: "Task received by client" }),
            ev("Driver Failure", { DriverError: "Failed to pull `x`: manifest unknown" }),
          ],
        },
      } as Allocation["TaskStates"],
    });
    expect(describeTaskEvents(a)).toEqual([
      "task worker: Received: Task received by client",
      "task worker: Driver Failure: Failed to pull `x`: manifest unknown",
    ]);
  });

  it("exit code from the last Terminated event (field or details)", () => {
    const states = (events: unknown[]) =>
      ({ t: { State: "dead", Events: events } }) as Allocation["TaskStates"];
    expect(
      exitCodeOf(
        alloc({ TaskStates: states([ev("Terminated", { ExitCode: 1 }), ev("Terminated", { ExitCode: 4 })]) }),
        "t",
      ),
    ).toBe(4);
    expect(
      exitCodeOf(alloc({ TaskStates: states([ev("Terminated", { Details: { exit_code: "2" } })]) }), "t"),
    ).toBe(2);
    expect(exitCodeOf(alloc({ TaskStates: states([ev("Driver Failure")]) }), "t")).toBeUndefined();
  });

  it("errors: failed (driver vs process), lost — each with a hint", () => {
    const driver = allocationError(
      alloc({
        TaskStates: {
          w: { State: "dead", Events: [ev("Driver Failure", { DriverError: "no image" })] },
        } as Allocation["TaskStates"],
      }),
      "job",
      "before its core answered",
    );
    expect(driver.code).toBe("E_NOMAD_ALLOC_FAILED");
    expect(driver.message).toBe(
      "allocation a1b2c3d4-0000 of job job on node client-7 failed before its core answered: Failed tasks\n  task w: Driver Failure: no image",
    );
    expect(driver.hint).toContain("task driver");
    const exited = allocationError(
      alloc({ ClientStatus: "complete", ClientDescription: "All tasks have completed" }),
      "job",
      "x",
      "boom",
    );
    expect(exited.message).toContain("exited x: All tasks have completed");
    expect(exited.message).toContain("last lines of stderr:\n    boom");
    expect(exited.hint).toContain("nomad alloc logs -stderr a1b2c3d4-0000");
    const lost = allocationError(
      alloc({ ClientStatus: "lost", ClientDescription: "alloc is lost since its node is down" }),
      "job",
      "while running",
    );
    expect(lost.code).toBe("E_NOMAD_ALLOC_LOST");
    expect(lost.message).toContain("is lost (alloc is lost since its node is down) while running");
  });

  it("placement: all nodes filtered is hopeless; exhausted capacity and no node evaluated wait", () => {
    const e = (m: Record<string, unknown>) =>
      [{ ID: "e", Status: "complete", FailedTGAllocs: { worker: m } }] as unknown as Evaluation[];
    const filtered = describePlacement(
      e({
        NodesEvaluated: 3,
        NodesFiltered: 3,
        ConstraintFiltered: { "missing drivers": 3 },
        ClassFiltered: {},
        DimensionExhausted: {},
        QuotaExhausted: [],
        NodesAvailable: {},
      }),
    );
    expect(filtered).toEqual({
      reason: "group worker: 3 nodes evaluated, 3 filtered by 'missing drivers'",
      hopeless: true,
    });
    const busy = describePlacement(
      e({
        NodesEvaluated: 3,
        NodesFiltered: 0,
        NodesExhausted: 3,
        ConstraintFiltered: {},
        ClassFiltered: {},
        DimensionExhausted: { memory: 3 },
        QuotaExhausted: [],
        NodesAvailable: {},
      }),
    );
    expect(busy).toEqual({
      reason: "group worker: 3 nodes evaluated, 3 exhausted on memory",
      hopeless: false,
    });
    const none = describePlacement(
      e({
        NodesEvaluated: 0,
        ConstraintFiltered: {},
        ClassFiltered: {},
        DimensionExhausted: {},
        QuotaExhausted: [],
        NodesAvailable: {},
      }),
    );
    // nodes down, draining or a pool scaling from zero: Nomad keeps a blocked eval, so wait
    expect(none?.hopeless).toBe(false);
    expect(none?.reason).toContain("no client node in the job's datacenters and node pool is ready");
    expect(describePlacement([])).toBeUndefined();
  });
});

describe("unseenEvents (Nomad keeps a task's last 10 events)", () => {
  const ev = (i: number) => ({ Type: `E${i}`, Time: 1_000 + i, DisplayMessage: "", Details: {} }) as never;
  const range = (a: number, b: number) => Array.from({ length: b - a }, (_, i) => ev(a + i));

  it("reports what is new while the window grows and after it starts sliding", () => {
    expect(unseenEvents([], range(0, 3))).toEqual(range(0, 3));
    expect(unseenEvents(range(0, 3), range(0, 5))).toEqual(range(3, 5));
    // full window of 10, two more arrive: the two oldest fall out, the two new are reported
    expect(unseenEvents(range(0, 10), range(2, 12))).toEqual(range(10, 12));
    expect(unseenEvents(range(2, 12), range(2, 12))).toEqual([]);
    // more than 10 new between two reads: everything visible is new
    expect(unseenEvents(range(0, 10), range(20, 30))).toEqual(range(20, 30));
  });
});

describe("killedByNomad", () => {
  const exec = (events: ReturnType<typeof ev>[], over: Partial<Allocation> = {}) =>
    alloc({ TaskStates: { exec: { State: "dead", Events: events } } as Allocation["TaskStates"], ...over });
  const terminated = ev("Terminated", { ExitCode: 137 });

  it("a task Nomad killed (a stop or purge from outside) or a lost allocation was killed from outside", () => {
    expect(
      killedByNomad(exec([ev("Killing", { KillReason: "job stopped" }), terminated, ev("Killed")]), "exec"),
    ).toBe(true);
    expect(killedByNomad(exec([terminated], { ClientStatus: "lost" }), "exec")).toBe(true);
  });

  it("a task that ended by itself (its command killed what ran) was not: the code under test's doing", () => {
    expect(killedByNomad(exec([ev("Started"), terminated, ev("Not Restarting")]), "exec")).toBe(false);
  });

  it("the allocation's own max_run_duration is its deadline, not a loss", () => {
    const why = "allocation exceeded max_run_duration";
    expect(killedByNomad(exec([ev("Killing", { KillReason: why }), terminated, ev("Killed")]), "exec")).toBe(
      false,
    );
    expect(
      killedByNomad(exec([ev("Killed")], { ClientDescription: why, ClientStatus: "complete" }), "exec"),
    ).toBe(false);
  });

  it("reads only the named task's events", () => {
    expect(killedByNomad(exec([ev("Killed")]), "other")).toBe(false);
  });
});
