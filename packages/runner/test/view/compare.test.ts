import { mkdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { compareEvals, compareRow, compareRuns, pageCompare, pairPolicies } from "../../src/view/compare.js";
import type { ReportHead } from "../../src/view/eval-data.js";
import type { TrajectoryRow } from "../../src/view/query.js";
import { startViewServer } from "../../src/view/server.js";
import { tempDir } from "../helpers/temp-dir.js";
import { manifest, metrics } from "./fixture.js";

const row = (task: string, i: number, reward: number | null, outcome = "completed"): TrajectoryRow => ({
  id: `${task}-t${i}`,
  task,
  index: i,
  policy: "gold",
  outcome,
  detail: "",
  reward,
  turns: 1,
  tokensIn: 1,
  tokensOut: 1,
  timings: { snapshot: 0, fork: 0, boot: 0, agent: 0, score: 0 },
  infraRetries: 0,
  tampered: 0,
});

describe("compareRow", () => {
  it("pass@1, unbiased pass@k at the largest common k, and the change B − A", () => {
    const r = compareRow(
      "x",
      { rewards: [1, 0, 0], outcomes: ["completed", "completed", "completed"] },
      { rewards: [1, 1, null, 0], outcomes: ["completed", "completed", "infra_error", "completed"] },
      "pass1",
    );
    expect(r.k).toBe(3); // A has 3 scored, B 3 scored (the infra error is no sample)
    expect(r.a).toMatchObject({ n: 3, c: 1, pass1: 1 / 3 });
    expect(r.a!.passK).toBeCloseTo(1, 9); // 1 − C(2,3)/C(3,3) = 1
    expect(r.b).toMatchObject({ n: 3, c: 2, pass1: 2 / 3, outcomes: { completed: 3, infra_error: 1 } });
    expect(r.delta).toBeCloseTo(1 / 3, 9);
    expect(r.change).toBe("fix");
  });
  it("equal figures but other outcomes read 'outcomes changed'; a side missing reads 'only in'", () => {
    const same = { rewards: [0], outcomes: ["completed"] };
    expect(compareRow("x", same, { rewards: [0], outcomes: ["timeout"] }, "meanReward").change).toBe(
      "outcomes changed",
    );
    expect(compareRow("x", same, same, "meanReward").change).toBe("same");
    expect(compareRow("x", same, undefined, "meanReward")).toMatchObject({
      change: "only in A",
      b: null,
      k: null,
    });
    expect(compareRow("x", undefined, same, "meanReward").change).toBe("only in B");
  });
});

describe("compareRuns", () => {
  it("one row per task by mean reward: regressions first (largest drop first), then fixes, then the rest", () => {
    const a = [
      row("t1", 0, 1),
      row("t1", 1, 1),
      row("t2", 0, 1),
      row("t3", 0, 0),
      row("t4", 0, 0),
      row("t5", 0, 1),
    ];
    const b = [
      row("t1", 0, 1),
      row("t1", 1, 0),
      row("t2", 0, 0),
      row("t3", 0, 1),
      row("t4", 0, 0, "timeout"),
      row("t6", 0, 1),
    ];
    const rows = compareRuns(a, b);
    expect(rows.map((r) => [r.key, r.change, r.delta])).toEqual([
      ["t2", "regression", -1],
      ["t1", "regression", -0.5],
      ["t3", "fix", 1],
      ["t4", "outcomes changed", 0],
      ["t5", "only in A", null],
      ["t6", "only in B", null],
    ]);
    expect(pageCompare(rows, 1, 4)).toMatchObject({
      total: 6,
      counts: { regression: 2, fix: 1, "outcomes changed": 1, "only in A": 1, "only in B": 1 },
      rows: [{ key: "t5" }, { key: "t6" }],
    });
  });
});

const trial = (item: string, policy: string, reward: number | null, outcome = "completed") => ({
  item,
  policy,
  reward,
  outcome,
  trajectoryId: "x",
});
const report = (policies: [string, string][], trials: unknown[]): ReportHead => ({
  policies: policies.map(([policy, label]) => ({ policy, label, pooled: {} })),
  trials,
});

describe("compareEvals", () => {
  it("matches the same (item, policy); leaves other policies as 'only in'; ignores rows it cannot read", () => {
    const a = report(
      [
        ["gold", "gold"],
        ["m", "m"],
      ],
      [trial("i1", "gold", 1), trial("i1", "m", 1), trial("i1", "m", 1)],
    );
    const b = report(
      [
        ["gold", "gold"],
        ["n", "n"],
      ],
      [trial("i1", "gold", 0), trial("i1", "n", 1), { item: "i1", policy: "gold", reward: "1<script>" }],
    );
    const c = compareEvals(a, b);
    expect(c.pairing).toBe("same item and policy");
    expect(c.rows.map((r) => [r.key, r.change])).toEqual([
      ["i1 × gold", "regression"],
      ["i1 × m", "only in A"],
      ["i1 × n (B)", "only in B"],
    ]);
  });
  it("one policy each, different (model A against model B): paired item by item", () => {
    expect(pairPolicies(["a"], ["b"]).how).toBe("policy a (A) against b (B), item by item");
    expect([...pairPolicies(["a", "c"], ["c", "d"]).map]).toEqual([["c", "c"]]);
    const a = report([["openai:x#m1", "m1"]], [trial("i1", "openai:x#m1", 0), trial("i2", "openai:x#m1", 1)]);
    const b = report([["openai:x#m2", "m2"]], [trial("i1", "openai:x#m2", 1), trial("i2", "openai:x#m2", 1)]);
    expect(compareEvals(a, b).rows.map((r) => [r.key, r.change, r.delta])).toEqual([
      ["i1 × m1", "fix", 1],
      ["i2 × m1", "same", 0],
    ]);
  });
});

describe("/api/compare on a real server", () => {
  it("pages two runs' comparison; a ref outside the root or a bad kind is refused", async () => {
    await using tmp = await tempDir("flakegym-view-compare-");
    for (const [run, reward] of [
      ["r1", 1],
      ["r2", 0],
    ] as const) {
      await mkdir(join(tmp.path, "runs", run), { recursive: true });
      await writeFile(join(tmp.path, "runs", run, "run.json"), JSON.stringify({ ...manifest, runId: run }));
      await writeFile(
        join(tmp.path, "runs", run, "metrics.jsonl"),
        `${JSON.stringify({ ...metrics, reward })}\n`,
      );
    }
    const server = await startViewServer({ dir: tmp.path, token: "tk" });
    try {
      const get = (qs: string) =>
        fetch(`http://127.0.0.1:${server.port}/api/compare?${qs}`, { headers: { "x-flakegym-token": "tk" } });
      const res = await get("kind=runs&a=runs/r1&b=runs/r2&size=1");
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        kind: "runs",
        total: 1,
        counts: { regression: 1 },
        rows: [{ key: "task-a", delta: -1, a: { pass1: 1 }, b: { pass1: 0 } }],
      });
      expect((await get("kind=both&a=runs/r1&b=runs/r2")).status).toBe(400);
      // the index row of each run carries its data size (metrics.jsonl here; no groups.jsonl)
      const idx = await fetch(`http://127.0.0.1:${server.port}/api/index`, {
        headers: { "x-flakegym-token": "tk" },
      });
      const { runs } = (await idx.json()) as { runs: { ref: string; bytes: number }[] };
      const size = (await stat(join(tmp.path, "runs", "r1", "metrics.jsonl"))).size;
      expect(runs.find((r) => r.ref === "runs/r1")?.bytes).toBe(size);
      expect((await get("kind=runs&a=runs/r1&b=runs/nope")).status).toBe(404);
      expect((await get("kind=evals&a=runs/r1&b=runs/r2")).status).toBe(404);
    } finally {
      await server.close();
    }
  });
});
