import { describe, expect, it } from "vitest";
import type { EvalReport, TrialRow } from "../../src/eval/report.js";
import {
  evalRunConfig,
  keepsWorkspace,
  snapshotKeysOf,
  sortTrials,
  trialRowOf,
} from "../../src/eval/run-eval.js";
import { trialPaths } from "../../src/eval/trial-files.js";
import type { RunConfig } from "../../src/run-format/schema.js";
import { result } from "../rollout/fixtures.js";

const items: EvalReport["items"] = [
  { id: "b-item", kind: "task", source: "cat/b-item" },
  { id: "a-item", kind: "scenario", source: "scen/a-item" },
];

describe("evalRunConfig", () => {
  const base = { policies: ["gold", "empty"], tasks: [], groupSize: 1, seed: 7 } as unknown as RunConfig;
  it("every item is a task of the one rollout; trials × policies trajectories each; the generated catalog", () => {
    const c = evalRunConfig(base, items, 3, "/tmp/cat");
    expect(c.tasks).toEqual(["b-item", "a-item"]);
    expect(c.groupSize).toBe(6);
    expect(c.catalog).toBe("/tmp/cat");
    expect(c.seed).toBe(7);
  });
  it("a dataset eval runs its rows: no catalog is set", () => {
    expect("catalog" in evalRunConfig(base, items, 1, undefined)).toBe(false);
  });
});

describe("keepsWorkspace", () => {
  it("all keeps every one, failed only failures, none nothing", () => {
    expect([true, false].map((p) => keepsWorkspace("all", p))).toEqual([true, true]);
    expect([true, false].map((p) => keepsWorkspace("failed", p))).toEqual([false, true]);
    expect([true, false].map((p) => keepsWorkspace("none", p))).toEqual([false, false]);
  });
});

describe("sortTrials", () => {
  const row = (item: string, policy: string, trial: number) => ({ item, policy, trial }) as TrialRow;
  it("orders by item (report order, not alphabetical), then policy (given order), then trial", () => {
    const sorted = sortTrials(
      [
        row("a-item", "gold", 0),
        row("b-item", "gold", 1),
        row("b-item", "empty", 0),
        row("b-item", "gold", 0),
      ],
      items,
      ["gold", "empty"],
    );
    expect(sorted.map((t) => `${t.item}/${t.policy}/${t.trial}`)).toEqual([
      "b-item/gold/0",
      "b-item/gold/1",
      "b-item/empty/0",
      "a-item/gold/0",
    ]);
  });
});

describe("snapshotKeysOf", () => {
  it("keeps the tasks that have a snapshot key", () => {
    expect(snapshotKeysOf({ tasks: { a: { snapshotKey: "k1" }, b: {} } })).toEqual({ a: "k1" });
  });
});

describe("trialRowOf", () => {
  const paths = trialPaths("b-item", "gold", 1);
  it("a passed trial: its outcome, checks, counts, phases and links; a workspace link only when kept", () => {
    const r = result({
      taskId: "b-item",
      index: 2,
      infraRetries: [{ attempt: 1, detail: "boot failed", at: "2026-11-21T00:00:00.000Z" }],
    });
    const row = trialRowOf(r, 1, [], paths, false);
    expect(row).toMatchObject({
      item: "b-item",
      policy: "gold",
      trial: 1,
      trajectoryId: "b-item-t2",
      outcome: "completed",
      reward: 1,
      passed: true,
      turns: 2,
      toolCalls: 0,
      tokensIn: 100,
      tokensOut: 20,
      phases: { snapshotMs: 1, forkMs: 2, bootMs: 3, agentMs: 4, scoreMs: 5 },
      infraRetries: 1,
      links: { log: paths.log, dir: paths.dir, diff: paths.diff },
    });
    expect(row.links.workspace).toBeUndefined();
    expect(trialRowOf(r, 1, [], paths, true).links.workspace).toBe(paths.workspace);
  });
  it("a failed or unscored trial does not pass; a limit is carried", () => {
    const failed = trialRowOf(result({ taskId: "b-item", index: 0, reward: 0 }), 0, [], paths, false);
    expect(failed.passed).toBe(false);
    const limited = trialRowOf(
      result({
        taskId: "b-item",
        index: 0,
        reward: 0,
        outcome: { kind: "limits_exceeded", limit: "model_requests", detail: "30 requests" },
      }),
      0,
      [],
      paths,
      false,
    );
    expect(limited).toMatchObject({ outcome: "limits_exceeded", limit: "model_requests", passed: false });
  });
});
