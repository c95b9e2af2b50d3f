import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { evalSummaryOf, ReportHead, trialDirsOf } from "../../src/view/eval-data.js";
import { createViewStore } from "../../src/view/run-data.js";
import { openSafeRoot } from "../../src/view/safe-read.js";
import { manifest, metrics } from "./fixture.js";

/**
 * An eval dir as `flakegym eval` leaves it: `run/` (run.json, metrics.jsonl, an empty
 * trajectories/) and each trial's files moved to `<item>/<policy>/trial-<n>/`, named by report.json.
 */
let root: string;
const report = {
  version: 1,
  evalId: "e1",
  createdAt: "2026-11-25T10:00:00.000Z",
  complete: true,
  items: [{ id: "task-a", kind: "task", source: "x" }],
  provenance: { trials: 1 },
  policies: [{ policy: "gold", label: "gold", pooled: { pass1: 0 }, meanReward: 0 }],
  trials: [
    { trajectoryId: "task-a-t0", links: { dir: "task-a/gold/trial-0", log: "task-a/gold/trial-0.log" } },
    { trajectoryId: "task-a-t1", links: { dir: "../outside/trial-1" } },
    { trajectoryId: 7 },
  ],
};
const score = {
  reward: 0,
  terms: [{ name: "tests", weight: 1, value: 0 }],
  testResults: { failToPass: { "test_a::it_works": "failed" }, passToPass: {} },
  testOutput: { "test_a::it_works": "AssertionError: expected 2, got 3" },
  flaky: [],
  touchedTestFiles: [],
  diffBytes: 10,
  durationMs: 5,
};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "flakegym-view-eval-"));
  const e = join(root, "evals", "e1");
  await mkdir(join(e, "run", "trajectories"), { recursive: true });
  await writeFile(join(e, "run", "run.json"), JSON.stringify(manifest));
  await writeFile(join(e, "run", "metrics.jsonl"), `${JSON.stringify({ ...metrics, reward: 0 })}\n`);
  const trial = join(e, "task-a", "gold", "trial-0");
  await mkdir(trial, { recursive: true });
  await writeFile(join(trial, "score.json"), JSON.stringify(score));
  await writeFile(join(trial, "diff.patch"), "diff --git a/x b/x\n+y\n");
  await writeFile(join(e, "report.json"), JSON.stringify(report));
  await writeFile(join(e, "summary.md"), "## flakegym eval e1\n");
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("an eval's trials in the viewer", () => {
  it("trialDirsOf maps trajectory ids to checked trial dirs, leaving out refused paths and bad rows", () => {
    const dirs = trialDirsOf(ReportHead.parse(report));
    expect([...dirs]).toEqual([["task-a-t0", ["task-a", "gold", "trial-0"]]]);
  });

  it("evalSummaryOf gives the index row's numbers", () => {
    expect(evalSummaryOf(ReportHead.parse(report))).toEqual({
      evalId: "e1",
      createdAt: "2026-11-25T10:00:00.000Z",
      complete: true,
      items: 1,
      trials: 1,
      trajectories: 3,
      policies: [{ policy: "gold", label: "gold", pass1: 0, meanReward: 0 }],
    });
  });

  it("a trial's page reads its score, test output and diff from where eval moved them", async () => {
    const store = createViewStore(await openSafeRoot(root));
    const t = await store.trajectory("evals/e1/run", "task-a-t0");
    expect(t.score?.testOutput?.["test_a::it_works"]).toBe("AssertionError: expected 2, got 3");
    expect(t.diff).toContain("+y");
    // a path in report.json the viewer refuses is not followed: the trial reads as absent
    const out = await store.trajectory("evals/e1/run", "task-a-t1");
    expect(out.score).toBeNull();
  });

  it("the index lists the eval with its numbers and its run; its files are served by name only", async () => {
    const store = createViewStore(await openSafeRoot(root));
    const idx = await store.index();
    expect(idx.evals).toMatchObject([
      { ref: "evals/e1", name: "e1", runRef: "evals/e1/run", summary: { evalId: "e1", items: 1 } },
    ]);
    const md = await store.evalFile("evals/e1", "summary.md");
    expect(md).toEqual({ name: "summary.md", text: "## flakegym eval e1\n", truncated: false });
    // served from the eval dir itself, the eval is named after the dir (not '.')
    const own = await createViewStore(await openSafeRoot(join(root, "evals", "e1"))).index();
    expect(own.evals).toMatchObject([{ ref: "", name: "e1", runRef: "run" }]);
  });

  it("/api/run's facts are what the page shows, not all of run.json", async () => {
    const store = createViewStore(await openSafeRoot(root));
    const run = await store.run("evals/e1/run", {
      sort: "id",
      dir: "asc",
      page: 0,
      size: 100,
    });
    expect(run.facts).toMatchObject({
      runId: "r1",
      tasks: 1,
      groupSize: 1,
      state: "failed", // no summary.json and no live runner holding run.lock
      atropos: "off",
    });
    expect(Object.keys(run)).not.toContain("manifest");
    expect(Object.keys(run)).not.toContain("summary");
  });
});
