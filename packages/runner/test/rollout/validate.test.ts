import { describe, expect, it } from "vitest";
import type { RunSummary } from "../../src/rollout/summary.js";
import { renderVerdicts, verdictFor } from "../../src/rollout/validate.js";
import { capabilitiesOf } from "../../src/workers/backend.js";
import { result } from "./fixtures.js";

const summary = (tasks: RunSummary["tasks"]): RunSummary => ({
  runId: "r",
  out: "o",
  complete: true,
  interrupted: false,
  durationMs: 1,
  trajectories: { expected: 2, finished: 2, infraRetries: 0, outcomes: {} as never, limits: {} },
  meanReward: 0.5,
  tasks,
});
const task = (taskId: string, error?: { code: string; message: string }) => ({
  taskId,
  trajectories: 2,
  expected: 2,
  rewards: [],
  meanReward: null,
  resolved: 0,
  outcomes: {},
  reasons: [],
  group: "written" as const,
  atropos: "off" as const,
  ...(error ? { error } : {}),
});

describe("verdictFor", () => {
  it("passes when gold scores 1, empty 0 and nothing is flaky", () => {
    const v = verdictFor(
      "a",
      summary([task("a")]),
      result({ taskId: "a", index: 0, reward: 1 }),
      result({ taskId: "a", index: 1, reward: 0 }),
    );
    expect(v).toMatchObject({
      taskId: "a",
      verdict: "pass",
      gold: 1,
      empty: 0,
      cheatsHeld: null,
      cheatsRun: 0,
      flaky: [],
      reasons: [],
    });
    expect(v.hackability?.unguarded).toEqual([]);
  });

  it("reports the hackability of gold's scoring, failing a task with unguarded tests unless they are accepted", () => {
    const gold = result({ taskId: "a", index: 0, reward: 1 });
    const scored = {
      ...gold,
      score: {
        ...gold.score!,
        testResults: { failToPass: { t1: "passed" as const, t2: "passed" as const }, passToPass: {} },
        decoys: { guarded: ["t1"], unguarded: [{ id: "t2", reason: "no literal" }] },
      },
    };
    const empty = result({ taskId: "a", index: 1, reward: 0 });
    const v = verdictFor("a", summary([task("a")]), scored, empty, [], {
      bindsHiddenReadOnly: capabilitiesOf("nomad").bindsHiddenReadOnly,
      root: true,
      allowUnguarded: false,
    });
    expect(v.verdict).toBe("fail");
    expect(v.reasons[0]).toMatch(/1 graded test\(s\) without a decoy.*t2 \(no literal\).*--allow-unguarded/);
    expect(v.hackability).toMatchObject({ guarded: 1, graded: 2 });
    expect(v.hackability?.defences.join(" ")).toMatch(/decoys on 1 of 2 graded tests.*checksummed/);
    const ok = verdictFor("a", summary([task("a")]), scored, empty, [], {
      bindsHiddenReadOnly: capabilitiesOf("local").bindsHiddenReadOnly,
      root: true,
      allowUnguarded: true,
    });
    expect(ok.verdict).toBe("pass");
    expect(renderVerdicts([ok]).join("\n")).toMatch(
      /a {5}1\.00 {2}0\.00 {3}- {7}0 {6}1\/2 {6}PASS\n {4}defences: decoys on 1 of 2[^\n]*bound read-only/,
    );
  });

  it("reports an eval_cmd task's one verdict guarded by its decoy twin, or unguarded (failing unless accepted)", () => {
    const gold = result({ taskId: "h", index: 0, reward: 1 });
    const empty = result({ taskId: "h", index: 1, reward: 0 });
    const evalGold = (decoys: NonNullable<typeof gold.score>["decoys"]) => ({
      ...gold,
      score: {
        ...gold.score!,
        testResults: { failToPass: {}, passToPass: {} },
        evalCmd: { exitCode: 0, timedOut: false },
        ...(decoys ? { decoys } : {}),
      },
    });
    const policy = {
      bindsHiddenReadOnly: capabilitiesOf("local").bindsHiddenReadOnly,
      root: true,
      allowUnguarded: false,
    };
    const guarded = verdictFor(
      "h",
      summary([task("h")]),
      evalGold({ guarded: ["eval_cmd"], unguarded: [] }),
      empty,
      [],
      policy,
    );
    expect(guarded.verdict).toBe("pass");
    expect(guarded.hackability).toMatchObject({ guarded: 1, graded: 1, unguarded: [] });
    expect(guarded.hackability?.defences[0]).toMatch(/decoy twin run.*must fail/);
    const bare = evalGold({
      guarded: [],
      unguarded: [{ id: "eval_cmd", reason: "no hidden file is a test file" }],
    });
    const unguarded = verdictFor("h", summary([task("h")]), bare, empty, [], policy);
    expect(unguarded.verdict).toBe("fail");
    expect(unguarded.reasons[0]).toMatch(
      /1 graded test\(s\) without a decoy.*eval_cmd \(no hidden file is a test file\).*--allow-unguarded/,
    );
    expect(unguarded.hackability?.defences[0]).toMatch(/^no decoy twin run/);
    expect(
      verdictFor("h", summary([task("h")]), bare, empty, [], { ...policy, allowUnguarded: true }).verdict,
    ).toBe("pass");
    const uncomputed = verdictFor("h", summary([task("h")]), evalGold(undefined), empty, [], policy);
    expect(uncomputed.hackability?.unguarded[0]?.reason).toMatch(/could not be computed on the host/);
  });

  it("counts the cheats that scored 0 and fails, naming it, a cheat that fooled the scorer", () => {
    const fooled = result({ taskId: "a", index: 3, reward: 1 });
    const v = verdictFor(
      "a",
      summary([task("a")]),
      result({ taskId: "a", index: 0, reward: 1 }),
      result({ taskId: "a", index: 1, reward: 0 }),
      [
        { name: "conftest-force-pass", result: result({ taskId: "a", index: 2, reward: 0 }) },
        { name: "import-exit-zero", result: fooled },
        { name: "kill-runner", result: result({ taskId: "a", index: 4, reward: null }) },
        { name: "never-ran", result: undefined },
      ],
    );
    expect(v).toMatchObject({ verdict: "fail", cheatsHeld: 1, cheatsRun: 4 });
    expect(v.reasons).toEqual([
      expect.stringMatching(/^cheat import-exit-zero: reward 1, expected 0 — the scorer was fooled/),
      "cheat kill-runner: no reward (infra_error: worker crashed)",
      "cheat never-ran: did not run",
    ]);
  });

  it("fails with reasons: gold below 1, empty above 0, flaky tests", () => {
    const gold = result({ taskId: "a", index: 0, reward: 0 });
    const flakyEmpty = result({ taskId: "a", index: 1, reward: 1 });
    (flakyEmpty.score as { flaky: string[] }).flaky = ["t_timing"];
    const v = verdictFor("a", summary([task("a")]), gold, flakyEmpty);
    expect(v.verdict).toBe("fail");
    expect(v.reasons.join("\n")).toMatch(/gold: reward 0, expected 1 — the reference solution does not pass/);
    expect(v.reasons.join("\n")).toMatch(
      /empty: reward 1, expected 0 — the hidden tests pass without any change/,
    );
    expect(v.reasons.join("\n")).toMatch(/flaky tests .*t_timing/);
  });

  it("skips, saying so, a task that needs network on an offline machine", () => {
    const v = verdictFor(
      "net",
      summary([task("net", { code: "E_NETWORK_REQUIRED", message: "github.com unreachable" })]),
      undefined,
      undefined,
    );
    expect(v.verdict).toBe("skip");
    expect(v.reasons[0]).toMatch(/skipped: needs network.*github\.com unreachable/);
  });

  it("fails, not skips, a task whose local repository is missing", () => {
    const v = verdictFor(
      "gone",
      summary([task("gone", { code: "E_REPO_MISSING", message: "its repository /m/a/b does not exist" })]),
      undefined,
      undefined,
    );
    expect(v).toMatchObject({
      verdict: "fail",
      reasons: ["task failed [E_REPO_MISSING]: its repository /m/a/b does not exist"],
    });
  });

  it("fails a task whose snapshot could not be built, and an infra failure", () => {
    expect(
      verdictFor(
        "b",
        summary([task("b", { code: "E_SNAPSHOT_BUILD", message: "smoke failed" })]),
        undefined,
        undefined,
      ),
    ).toMatchObject({
      verdict: "fail",
      reasons: ["task failed [E_SNAPSHOT_BUILD]: smoke failed"],
    });
    const v = verdictFor(
      "a",
      summary([task("a")]),
      result({ taskId: "a", index: 0, reward: null }),
      result({ taskId: "a", index: 1, reward: 0 }),
    );
    expect(v.reasons).toEqual(["gold: infra_error: worker crashed"]);
  });

  it("renders a table with the reasons under each failing task and a count line", () => {
    const lines = renderVerdicts([
      {
        taskId: "a",
        verdict: "pass",
        gold: 1,
        empty: 0,
        cheatsHeld: 6,
        cheatsRun: 6,
        flaky: [],
        reasons: [],
      },
      {
        taskId: "bb",
        verdict: "fail",
        gold: 0,
        empty: 0,
        cheatsHeld: null,
        cheatsRun: 0,
        flaky: [],
        reasons: ["gold: reward 0"],
      },
    ]);
    expect(lines).toEqual([
      "TASK  GOLD  EMPTY  CHEATS  FLAKY  GUARDED  RESULT",
      "a     1.00  0.00   6/6     0      -        PASS",
      "bb    0.00  0.00   -       0      -        FAIL",
      "    gold: reward 0",
      "1 passed, 1 failed, 0 skipped",
    ]);
  });
});
