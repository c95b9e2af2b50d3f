/**
 * Scoring on the Nomad backend: every exec is a fresh allocation, so scoring must be one
 * self-contained script. A catalog task's gold and empty diffs are scored through
 * `createNomadBackend` against the Nomad double (raw_exec: the script runs on this machine, in
 * the allocation's workspace, copied from the runner's fork) → rewards 1 and 0, nothing left.
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  buildSnapshot,
  createNomadBackend,
  createNomadClient,
  forkSnapshot,
  hiddenTestsOf,
  loadTask,
  scoreDiff,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, startNomadDouble } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

/** A diff adding a file of `n` bytes. */
function bigNewFile(n: number): string {
  const lines = Array.from({ length: Math.ceil(n / 80) }, (_, i) => `+${String(i).padStart(79, "x")}`);
  return `diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,${lines.length} @@\n${lines.join("\n")}\n`;
}

describe("scoring on the Nomad backend (double, raw_exec)", () => {
  it("one exec per score: gold scores 1, no change scores 0, every job is purged", async () => {
    await using tmp = await makeTempDir("flakegym-nomad-score-");
    const task = await loadTask("semver-lite-caret-zero");
    const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
    const hidden = await hiddenTestsOf(task, 60_000);
    const gold = await readFile(task.paths.solution, "utf8");
    const double = await startNomadDouble();
    const backend = createNomadBackend(
      { driver: { driver: "raw_exec", command: "/bin/sh", allowUnisolated: true }, pollMs: 5_000 },
      { client: createNomadClient({ address: double.url }) },
    );
    const score = async (diff: string, name: string, withBuild: boolean) => {
      const fork = await forkSnapshot(snapshot, { dest: join(tmp.path, "forks", name) });
      const worker = await backend.start({
        runId: "nomad-score",
        taskId: task.spec.id,
        trajectoryId: name,
        profile: task.spec.profile,
        workspace: fork.workspace,
        gateway: {},
        limits: { memoryMb: 1024, pids: 256, wallClockMs: 120_000 },
        agent: false,
      });
      try {
        expect(worker.statelessExec).toBe(true);
        return await scoreDiff(
          worker,
          diff,
          hidden,
          {
            partialCredit: "none",
            weights: { tests: 1, build: withBuild ? 1 : 0, lint: 0, judge: 0 },
            ...(withBuild ? { buildCmd: "node --check src/range.js" } : {}),
            repeat: 2,
            termTimeoutMs: 60_000,
            taskPrompt: task.spec.prompt,
          },
          AbortSignal.timeout(120_000),
        );
      } finally {
        await worker.stop();
        await fork.release();
      }
    };
    try {
      const registered = () => double.requests.filter((r) => r.method === "POST" && r.path === "/v1/jobs");
      const before = registered().length;
      const g = await score(gold, "gold", true);
      expect(registered().length - before).toBe(1); // the whole score was one exec job
      expect(g).toMatchObject({ reward: 1, tests: { resolved: true }, flaky: [] });
      expect(g.terms.map((t) => [t.name, t.value])).toEqual([
        ["tests", 1],
        ["build", 1],
      ]);
      const e = await score("", "empty", false);
      expect(e.reward).toBe(0);
      expect(e.testResults!.passToPass).toEqual({ "caret on one and above is unchanged": "passed" });
      // too long for one exec's command line: refused before anything runs, naming the sizes
      const huge = `${gold}${bigNewFile(150_000)}`;
      const before2 = registered().length;
      await expect(score(huge, "huge", false)).rejects.toMatchObject({
        code: "E_SCORE_TOO_LARGE",
        message: expect.stringMatching(/one exec on the nomad backend takes at most/),
      });
      expect(registered().length).toBe(before2);
      expect(double.jobs()).toEqual([]);
      expect(double.liveTasks()).toBe(0);
    } finally {
      await backend.close();
      await double.close();
    }
  }, 180_000);
});
