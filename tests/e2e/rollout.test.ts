import { readdir } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { findProcesses, makeTempDir, runCli, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { partialFixPlan, quickStart, readRun, readScore, TASK } from "./rollout-helpers.js";

/**
 * `flakegym rollout` end to end, as a user runs it: the real CLI process, the real Cline core in
 * bubblewrap workers, the policy gateway with the built-in policies, scoring in fresh forks of a
 * real snapshot. The fastest offline catalog task: the README's main job as written (its default
 * group), then a mixed group of 3.
 */

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-rollout-");
});
afterAll(async () => {
  await tmp.cleanup();
});

// The two runs at once (each its own run dir and run id; the snapshot is built once, under its
// lock): a run spends much of its time waiting (boot, sandbox setup, scoring).
describe.concurrent("flakegym rollout (real core, offline task)", () => {
  it("the README's main job (default policy: gold with a banner): every trajectory scores 1 and every output is written", async () => {
    const out = join(tmp.path, "gold");
    // the quick start's command as written, its run directory here
    const main = quickStart()[0]!
      .replace(/^npm ci && npx flakegym /, "")
      .split(/\s+/);
    expect(main).toEqual(["rollout", "--task", TASK]);
    const r = await runCli([...main, "--out", out], {
      timeoutMs: 600_000,
      env: { ...process.env, FLAKEGYM_POLICY: "" },
    });
    expect(r.stderr).toMatch(/validating the environment with the `gold` policy/);
    expect(r.stderr).not.toMatch(/^error/m);
    expect(r.exitCode, r.stderr).toBe(0);
    const run = await readRun(out);

    const n = run.manifest.config.groupSize; // the embedded default
    const ids = Array.from({ length: n }, (_, i) => `${TASK}-t${i}`);
    expect(n).toBeGreaterThanOrEqual(2);
    expect(run.summary?.tasks[0]).toMatchObject({
      taskId: TASK,
      rewards: ids.map(() => 1),
      resolved: n,
      group: "written",
    });
    expect(r.stdout).toMatch(
      new RegExp(`${TASK}\\s+${n}/${n}\\s+1\\.00\\s+${n}\\s+${ids.map(() => "1\\.00").join(" ")}`),
    );

    expect(run.manifest.provenance.cline).toMatchObject({
      version: "1.0.10",
      integrity: expect.stringMatching(/^sha512-/),
    });
    expect(run.manifest.tasks[TASK]).toMatchObject({
      snapshotKey: expect.stringMatching(/^[0-9a-f]{64}$/),
      profile: "node",
    });
    expect(run.manifest.config.policies).toEqual(["gold"]);

    expect(run.groups).toHaveLength(1);
    const g = run.groups[0]!;
    expect(g.scores).toEqual(ids.map(() => 1));
    expect(g.tokens).toBeUndefined();
    expect(
      g.messages?.every((m) => m.length >= 3 && m[0]?.role === "system" && m.at(-1)?.role === "assistant"),
    ).toBe(true);
    expect(g.group_overrides?.provenance).toMatchObject({
      snapshotKey: run.manifest.tasks[TASK]?.snapshotKey,
    });

    expect(run.samples.map((s) => [s.trajectory_id, s.reward]).sort()).toEqual(ids.map((id) => [id, 1]));
    expect(String(run.samples[0]!.completion)).toContain("src/range.js");
    expect(run.metrics).toHaveLength(n);
    for (const m of run.metrics) {
      expect(m).toMatchObject({ outcome: "completed", boot_ok: true, reward: 1, infra_retries: 0 });
      expect(m.turns as number).toBeGreaterThanOrEqual(2);
      expect(m.boot_ms as number).toBeGreaterThan(0);
      expect(m.score_ms as number).toBeGreaterThan(0);
      // per-phase CPU (worker cgroups, the runner's share): present, positive, and no more than
      // the phases' wall time on every core (0.25 s for the CPU reads around each timed phase)
      const cpu = [m.boot_cpu_s, m.agent_cpu_s, m.score_cpu_s, m.runner_cpu_s];
      for (const c of cpu) expect(c, JSON.stringify(m)).toBeGreaterThan(0);
      expect(m.boot_cpu_s!, "a core's boot takes CPU seconds").toBeGreaterThan(0.5);
      const wallS = (m.boot_ms + m.agent_ms + m.score_ms) / 1000 + 0.25;
      expect(m.boot_cpu_s! + m.agent_cpu_s! + m.score_cpu_s!).toBeLessThanOrEqual(
        wallS * availableParallelism(),
      );
    }
    const t0 = join(out, "trajectories", `${TASK}-t0`);
    const files = await readdir(t0);
    expect(files).toEqual(
      expect.arrayContaining(["turns.jsonl", "cline", "diff.patch", "score.json", "result.json"]),
    );
    expect(await readdir(join(t0, "cline"))).toEqual(
      expect.arrayContaining(["api_conversation_history.json", "ui_messages.json", "task_metadata.json"]),
    );
    expect(await readScore(out, `${TASK}-t0`)).toMatchObject({
      reward: 1,
      tests: { resolved: true, failToPass: { passed: 3, total: 3 } },
      touchedTestFiles: [],
    });

    // nothing of the run is left running
    expect(await findProcesses(run.manifest.runId)).toEqual([]);
  });

  it("a mixed group (empty, a scripted half fix that edits the hidden tests, gold) gets distinct scores", async () => {
    const out = join(tmp.path, "mixed");
    const plan = await partialFixPlan(tmp.path);
    const r = await runCli(
      [
        "rollout",
        "--task",
        TASK,
        "--group-size",
        "3",
        "--policy",
        "empty",
        "--policy",
        `scripted:${plan}`,
        "--policy",
        "gold",
        "--partial-credit",
        "fraction",
        "--out",
        out,
      ],
      { timeoutMs: 400_000 },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/validating the environment/);
    const run = await readRun(out);
    // fraction credit: empty keeps the one PASS_TO_PASS test (1/4), the half fix 3/4, gold 4/4
    expect(run.summary?.tasks[0]?.rewards).toEqual([0.25, 0.75, 1]);
    expect(run.groups[0]!.scores).toEqual([0.25, 0.75, 1]);
    const half = await readScore(out, `${TASK}-t1`);
    expect(half.touchedTestFiles).toEqual(["test/caret-zero.test.mjs"]);
    expect(half.testResults?.failToPass).toEqual({
      "caret zero major stays within the minor": "passed",
      "caret zero minor stays on the patch": "failed",
      "caret zero works inside sets and alternatives": "passed",
    });
    expect(run.groups[0]!.overrides?.map((o) => o.policy)).toEqual(["empty", `scripted:${plan}`, "gold"]);
  });
});
