import { cp, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, runCli } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";
import { TASK } from "./rollout-helpers.js";

/**
 * Worker reuse does not change a reward (issue 47): `flakegym validate` on one task — gold, empty
 * and two cheats, one worker at a time — with `--reuse 1` (a fresh worker each) and with
 * `--reuse 4` (one worker reset between them: empty runs where gold solved the task, the cheats
 * where the others left their traces). Every trajectory's reward must be the same in both runs.
 */

const CATALOG = join(REPO_ROOT, "packages/runner/catalog");
// two validate runs of four Cline sessions each (3–6 min here): its own script, not `npm test`
const wanted = process.env["FLAKEGYM_VALIDATE_REUSE"] === "1";
if (!wanted) console.warn("validate-reuse skipped: run it with `npm run test:validate-reuse` (3–6 min)");
const KEEP = ["import-patch-assert", "kill-runner"];

/** trajectory id (the run's id cut off) → reward, from each metrics line of a validate run. */
async function rewardsOf(run: string): Promise<Record<string, number | null>> {
  const out: Record<string, number | null> = {};
  for (const task of await readdir(run)) {
    const text = await readFile(join(run, task, "metrics.jsonl"), "utf8");
    for (const line of text.trim().split("\n")) {
      const m = JSON.parse(line) as { trajectory_id: string; reward: number | null; pooled_worker?: boolean };
      out[`${m.trajectory_id.slice(m.trajectory_id.lastIndexOf(TASK))}`] = m.reward;
    }
  }
  return out;
}

describe.skipIf(!wanted)("flakegym validate with worker reuse", () => {
  it("gives every trajectory the reward it gets on fresh workers", async () => {
    await using tmp = await makeTempDir("flakegym-e2e-validate-reuse-");
    const catalog = join(tmp.path, "catalog");
    await cp(join(CATALOG, TASK), join(catalog, TASK), { recursive: true });
    for (const f of await readdir(join(catalog, TASK, "cheats")))
      if (!KEEP.includes(f.replace(/\.json$/, ""))) await rm(join(catalog, TASK, "cheats", f));
    const validate = async (reuse: number) => {
      const out = join(tmp.path, `run-reuse-${reuse}`);
      const r = await runCli(
        ["validate", "--task", TASK, "--catalog", catalog, "--repeat", "1", "--concurrency", "1"].concat([
          "--reuse",
          String(reuse),
          "--out",
          out,
        ]),
        { timeoutMs: 900_000 },
      );
      expect(r.exitCode, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^${TASK}\\s+1\\.00\\s+0\\.00\\s+2/2\\s+0\\s`, "m"));
      return { rewards: await rewardsOf(out), stderr: r.stderr };
    };
    const fresh = await validate(1);
    const reused = await validate(4);
    // the reuse side did reuse: the pool's closing line counts trajectories on a reset worker
    expect(reused.stderr).toMatch(/worker reuse: [1-9]\d* of \d+ pooled trajectories ran on a reset worker/);
    expect(fresh.stderr).not.toMatch(/worker reuse:/);
    console.log(`validate-reuse: rewards fresh ${JSON.stringify(fresh.rewards)}`);
    expect(Object.keys(fresh.rewards).length).toBe(4); // gold, empty, two cheats
    expect(reused.rewards).toEqual(fresh.rewards);
  }, 1_900_000);
});
