import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, type TempDir, waitFor } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentTree, commandPlan } from "./src/agent-tree.js";
import { startFaultUpstream } from "./src/fault-upstream.js";
import { describeLeftovers, findLeftovers } from "./src/leftovers.js";
import { createScenario, FULL, removeScenarioDirs, runIdOf, TASK } from "./src/scenario.js";

/**
 * Faults round four (issue 46, what round three left): a supervisor stopped alone in a sandbox of
 * one user (from the host before any command of the agent's ran; by the agent's own command).
 * Real CLI, real workers; `npm run chaos`. (A freeze in the trajectory's clock's last seconds is not
 * handled yet: the trajectory's clock is the Cline driver's, which knows no freeze.)
 */

let tmp: TempDir;
let cache: string;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-chaos-four-");
  cache = join(tmp.path, "cache");
});
afterAll(async () => {
  await removeScenarioDirs();
  await tmp?.cleanup();
});

const ONE_USER = { FLAKEGYM_AGENT_USERS: "one" };
const victim = `${TASK}-t0`;
const isSupervisor = (p: { cmdline: string }) =>
  !/^(\S*\/)?bwrap /.test(p.cmdline) && p.cmdline.includes("cline-supervisor.mjs");
const resultOf = async (out: string) =>
  JSON.parse(await readFile(join(out, "trajectories", victim, "result.json"), "utf8"));

/** SIGCONT to every pid (gone ones are skipped: killed with their worker). */
function resume(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGCONT");
    } catch {
      // gone
    }
  }
}

if (!FULL)
  console.log(
    "chaos faults-four: skipped: one-user supervisor stops run with `npm run chaos` only (reduced run)",
  );

describe.skipIf(!FULL)("chaos: faults round four (one user)", () => {
  it("one user: the supervisor stopped alone from the host before any command ran — infra_error, retried, then completed (no command of the agent's could have stopped it)", async () => {
    const s = await createScenario(tmp.path, "one-user-supervisor", cache, ONE_USER);
    const slow = await startFaultUpstream("slow", { delayMs: 4000 });
    let stopped: number[] = [];
    try {
      const t0 = Date.now();
      const child = s.cli([
        ...["rollout", "--task", TASK, "--group-size", "1", "--policy", `openai:${slow.baseUrl}#chaos-model`],
        ...["--timeout", "300", "--idle-timeout", "120", "--max-infra-retries", "1", "--out", s.out],
      ]);
      const found = await waitFor(
        async () => {
          if (slow.requests < 1) return false;
          stopped = (await agentTree(victim, s.tmp)).filter(isSupervisor).map((p) => p.pid);
          for (const pid of stopped) process.kill(pid, "SIGSTOP");
          return stopped.length > 0;
        },
        300_000,
        50,
      );
      expect(found, "never saw the core wait on the model").toBe(true);
      const r = await child;
      const res = await resultOf(s.out);
      expect(res.infraRetries.length, String(r.stderr).slice(-2000)).toBe(1);
      expect(res.infraRetries[0].detail).toMatch(/its supervisor \(pid \d+\) is stopped/);
      expect(res.outcome.kind).toBe("completed");
      // ended by the heartbeat (5 s), not by the 120 s idle limit
      expect((Date.now() - t0) / 1000).toBeLessThan(110);
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(0);
      const left = await findLeftovers([s.tmp, await runIdOf(s.out)], s.tmp);
      expect(describeLeftovers(left)).toEqual([]);
    } finally {
      resume(stopped);
      await slow.close();
    }
  }, 600_000);

  it("one user: the agent's own command stops its supervisor — the policy's end (agent_error, scored), never retried, ended by the heartbeat not the clocks", async () => {
    const s = await createScenario(tmp.path, "one-user-self-stop", cache, ONE_USER);
    // the command finds the supervisor by its command line in /proc (same user, same pid namespace)
    const plan = await commandPlan(
      s.root,
      "self-stop",
      "for d in /proc/[0-9]*; do grep -q cline-supervisor.mjs $d/cmdline 2>/dev/null && kill -STOP ${d#/proc/}; done; echo stopped",
    );
    const t0 = Date.now();
    const r = await s.cli([
      ...["rollout", "--task", TASK, "--group-size", "1", "--policy", `scripted:${plan}`],
      ...["--timeout", "300", "--idle-timeout", "120", "--max-infra-retries", "2", "--out", s.out],
    ]);
    const res = await resultOf(s.out);
    expect(res.outcome, String(r.stderr).slice(-2000)).toMatchObject({ kind: "agent_error" });
    expect(res.outcome.detail).toMatch(/its supervisor \(pid \d+\) is stopped/);
    expect(res.outcome.detail).toMatch(/same user as the core/);
    expect(res.infraRetries).toEqual([]);
    expect((Date.now() - t0) / 1000).toBeLessThan(110);
    const left = await findLeftovers([s.tmp, await runIdOf(s.out)], s.tmp);
    expect(describeLeftovers(left)).toEqual([]);
  }, 600_000);
});
