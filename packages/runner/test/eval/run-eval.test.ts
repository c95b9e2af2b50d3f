import { mkdir, mkdtemp, readFile, readlink, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { evalExitCode } from "../../src/eval/exit-code.js";
import { EvalReport } from "../../src/eval/report.js";
import { runEval, wallPhasesOf } from "../../src/eval/run-eval.js";
import { loadScenario, type Scenario, suiteScenarioDirs } from "../../src/eval/scenario.js";
import { createDummyDeps } from "../../src/rollout/dummy-deps.js";
import { trialOf } from "../../src/rollout/plan.js";
import type { RunConfig } from "../../src/rollout/schema.js";
import { BUILTIN_CATALOG_DIR } from "../../src/tasks/catalog.js";

/**
 * runEval over the real orchestrator (runRollout) with the in-process dummy deps: the mapping of
 * trajectories to (item, policy, trial), the directory layout, report.json and the exit code —
 * without workers or cores (the e2e suite runs the real ones).
 */

let dir: string;
let scenarios: Scenario[];
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flakegym-run-eval-"));
  // a scenario whose id is a name the eval directory uses itself
  const own = join(dir, "scenarios", "run");
  await mkdir(own, { recursive: true });
  await writeFile(
    join(own, "scenario.json"),
    JSON.stringify({ version: 1, summary: "s", prompt: "p", checks: [{ kind: "file_exists", path: "x" }] }),
  );
  scenarios = [await loadScenario(suiteScenarioDirs("smoke")[0]!), await loadScenario(own)];
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const POLICIES = ["gold", "empty", "scripted:mixed.json"];
const config: RunConfig = {
  tasks: ["(eval)"],
  groupSize: 1,
  policies: POLICIES,
  concurrency: 4,
  maxInfraRetries: 0,
  seed: 0,
  partialCredit: "none",
  weights: { tests: 1, build: 0, lint: 0, judge: 0 },
  testRepeat: 1,
  segments: "last",
  backend: "local",
  limits: { maxTurns: 5, timeoutMs: 10_000, testTimeoutMs: 10_000 },
};

describe("runEval (dummy deps)", () => {
  it("maps trajectory i to policy i mod P and trial ⌊i/P⌋, lays out the trials and writes the report", async () => {
    const evalDir = join(dir, "evals", "e1");
    const deps = createDummyDeps({
      attempt: (slot) => {
        const trial = trialOf(POLICIES, slot.index);
        if (slot.taskId === "run" && slot.policy === "gold" && trial === 1) {
          return { throws: new Error("worker lost") };
        }
        const reward = slot.policy === "gold" ? 1 : slot.policy === "empty" ? 0 : trial % 2 === 0 ? 1 : 0;
        return { outcome: { kind: "completed", detail: "done" }, reward };
      },
    });
    const r = await runEval({
      evalDir,
      evalId: "e1",
      items: { scenarios, tasks: [], catalog: BUILTIN_CATALOG_DIR },
      config,
      trials: 3,
      keepWorkspaces: "failed",
      progress: () => {},
      signal: new AbortController().signal,
      makeDeps: async () => deps,
    });
    expect(deps.agentCalls).toHaveLength(18);
    const cell = (item: string, p: string) => r.report.cells.find((c) => c.item === item && c.policy === p)!;
    expect(cell("create-file", "gold").stats).toMatchObject({ status: "PASS", n: 3, c: 3 });
    expect(cell("create-file", "empty").stats).toMatchObject({ status: "FAIL", n: 3, c: 0 });
    expect(cell("create-file", "scripted:mixed.json").stats).toMatchObject({ status: "FLAKY", n: 3, c: 2 });
    expect(cell("run", "gold")).toMatchObject({ infraErrors: 1, stats: { n: 2, c: 2 } });
    expect(evalExitCode(r.report, false)).toMatchObject({
      code: 1,
      why: expect.stringMatching(/1 trial\(s\) ended in infra_error/),
    });

    const onDisk = EvalReport.parse(JSON.parse(await readFile(join(evalDir, "report.json"), "utf8")));
    expect(onDisk).toEqual(r.report);
    const mixedTrial1 = onDisk.trials.find(
      (t) => t.item === "create-file" && t.policy === "scripted:mixed.json" && t.trial === 1,
    )!;
    expect(mixedTrial1).toMatchObject({
      passed: false,
      links: { log: "create-file/scripted-mixed/trial-1.log" },
    });
    expect(await readFile(join(evalDir, mixedTrial1.links.log), "utf8")).toMatch(/trial {5}1\n/);
    expect(await readFile(join(evalDir, mixedTrial1.links.dir, "attempt.txt"), "utf8")).toBe("attempt 0\n");
    // the item called "run" does not land in the rollout's run/ directory
    expect(onDisk.trials.find((t) => t.item === "run")!.links.dir).toMatch(/^item-run\/gold\/trial-0$/);
    expect((await stat(join(evalDir, "run", "run.json"))).isFile()).toBe(true);
    for (const f of ["summary.md", "report.html"])
      expect((await stat(join(evalDir, f))).size).toBeGreaterThan(100);
    expect(await readlink(join(dir, "evals", "latest"))).toBe("e1");
  });

  it("refuses a directory that is not empty", async () => {
    const evalDir = join(dir, "full");
    await mkdir(evalDir, { recursive: true });
    await writeFile(join(evalDir, "x"), "");
    await expect(
      runEval({
        evalDir,
        evalId: "e2",
        items: { scenarios, tasks: [], catalog: BUILTIN_CATALOG_DIR },
        config,
        trials: 1,
        keepWorkspaces: "none",
        progress: () => {},
        signal: new AbortController().signal,
        makeDeps: async () => createDummyDeps(),
      }),
    ).rejects.toThrow(/the eval directory .*full is not empty/);
  });
});

describe("wallPhasesOf", () => {
  it("keeps a trajectory's wall-time phases and leaves its CPU fields to metrics.jsonl", () => {
    const wall = { snapshotMs: 1, forkMs: 2, bootMs: 3, agentMs: 4, scoreMs: 5 };
    expect(wallPhasesOf({ ...wall, bootCpuS: 2.5, agentCpuS: 1, scoreCpuS: 0.5, runnerCpuS: 0.2 })).toEqual(
      wall,
    );
  });
});
