import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, runCli, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRun, TASK } from "./rollout-helpers.js";

/**
 * Outcomes tell the truth, end to end: an agent whose command blows the worker's memory limit ends
 * as `limits_exceeded`/`memory` — once, never retried — and stays in its group as data with its
 * reward; the run exits 0 and names the limit in metrics.jsonl and summary.json.
 */

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-outcomes-");
});
afterAll(async () => {
  await tmp.cleanup();
});

describe("rollout outcomes (real core, local worker)", () => {
  it("a memory hog ends the trajectory as limits_exceeded/memory, not retried, scored, exit 0", async () => {
    const plan = join(tmp.path, "hog.json");
    // Buffers live outside node's heap limit: this grows until the worker's cgroup limit stops it
    const hog = `node -e "const a=[];for(;;)a.push(Buffer.alloc(64<<20,1))"`;
    await writeFile(
      plan,
      JSON.stringify({
        version: 1,
        turns: [
          {
            tool_calls: [
              { name: "execute_command", arguments: { command: hog, requires_approval: "false" } },
            ],
          },
          // the worker's watchdog polls its cgroup: a limit hit in the last interval before the
          // agent completes is not seen (docs/reference/rollout.md), so the agent lingers a moment here
          {
            tool_calls: [
              { name: "execute_command", arguments: { command: "sleep 5", requires_approval: "false" } },
            ],
          },
          { tool_calls: [{ name: "attempt_completion", arguments: { result: "done" } }] },
        ],
      }),
    );
    const out = join(tmp.path, "hog");
    const r = await runCli(
      ["rollout", "--task", TASK, "--group-size", "1", "--policy", `scripted:${plan}`, "--out", out],
      { timeoutMs: 400_000 },
    );
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/infra failure, retry/);
    const run = await readRun(out);
    const res = run.results.get(`${TASK}-t0`)!;
    expect(res.outcome, JSON.stringify(res.outcome)).toMatchObject({
      kind: "limits_exceeded",
      limit: "memory",
    });
    expect(res.outcome.detail).toMatch(/memory limit/);
    expect(res.infraRetries).toEqual([]);
    expect(res.reward).toBe(0);
    expect(run.metrics).toEqual([
      expect.objectContaining({ outcome: "limits_exceeded", limit: "memory", reward: 0, infra_retries: 0 }),
    ]);
    expect(run.summary?.trajectories.limits).toEqual({ memory: 1 });
    expect(run.groups[0]?.scores).toEqual([0]);
  });
});
