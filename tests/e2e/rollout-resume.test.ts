import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  findProcesses,
  makeTempDir,
  processReaper,
  REPO_ROOT,
  slowPlan,
  type TempDir,
  waitFor,
} from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRun, TASK } from "./rollout-helpers.js";

/**
 * Interruptions, end to end: Ctrl-C stops a run cleanly. A run killed with SIGKILL and resumed, and
 * a Cline core killed mid-trajectory (an infra failure, retried and recorded), are proved in
 * tests/chaos/chaos.test.ts (`npm test` runs its reduced scale), with the run's invariants checked.
 */

let tmp: TempDir;
const reaper = processReaper();
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-resume-");
});
afterAll(async () => {
  reaper.killAll();
  await tmp.cleanup();
});

/** Trajectory ids with a result.json. */
async function resultsIn(out: string): Promise<string[]> {
  const ids = await readdir(join(out, "trajectories")).catch(() => [] as string[]);
  const done = await Promise.all(
    ids.map((id) =>
      readFile(join(out, "trajectories", id, "result.json")).then(
        () => id,
        () => undefined,
      ),
    ),
  );
  return done.filter((x): x is string => x !== undefined);
}

describe("interrupted runs", () => {
  it("Ctrl-C (SIGINT) stops cleanly: exit 130, workers gone, finished trajectories kept", async () => {
    const out = join(tmp.path, "interrupted");
    const plan = await slowPlan(tmp.path, 3);
    const child = execa(
      process.execPath,
      [
        join(REPO_ROOT, "packages/runner/bin/flakegym.js"),
        "rollout",
        "--task",
        TASK,
        "--group-size",
        "2",
        "--concurrency",
        "1",
        "--policy",
        `scripted:${plan}`,
        "--out",
        out,
      ],
      { reject: false, stdin: "ignore" },
    );
    reaper.track(child.pid);
    const ready = await waitFor(
      async () => {
        // one trajectory finished and the other's agent is talking (an infra retry may reorder them)
        const done = await resultsIn(out);
        const other = [`${TASK}-t0`, `${TASK}-t1`].find((id) => !done.includes(id));
        const turns = other
          ? await readFile(join(out, "trajectories", other, "turns.jsonl"), "utf8").catch(() => "")
          : "";
        return done.length === 1 && turns.trim() !== "";
      },
      240_000,
      100,
    );
    expect(ready).toBe(true);
    child.kill("SIGINT");
    const r = await child;
    expect(r.exitCode, String(r.stderr)).toBe(130);
    expect(String(r.stderr)).toMatch(/SIGINT received, stopping cleanly/);
    expect(String(r.stdout), String(r.stderr)).toMatch(/INTERRUPTED \(finish with --resume\)/);
    const run = await readRun(out);
    const kept = [...run.results.keys()];
    expect(kept, JSON.stringify([...run.results.values()].map((x) => x.infraRetries))).toHaveLength(1);
    expect(run.summary).toMatchObject({ interrupted: true, complete: false });
    expect(run.metrics.map((m) => m.trajectory_id)).toEqual(kept);
    expect(run.groups).toEqual([]);
    expect(await findProcesses(run.manifest.runId as string)).toEqual([]);
  });
});
