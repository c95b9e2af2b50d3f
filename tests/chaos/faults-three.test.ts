import { readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, processTable, REPO_ROOT, type TempDir, waitFor } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { agentTree, commandPlan } from "./src/agent-tree.js";
import { startFaultUpstream } from "./src/fault-upstream.js";
import { describeLeftovers, findLeftovers } from "./src/leftovers.js";
import { BIN, createScenario, FULL, removeScenarioDirs, runIdOf, TASK } from "./src/scenario.js";
import { mountSmallTmpfs, unmountTmpfs } from "./src/tmpfs.js";

/**
 * Faults round three with the real CLI and real workers: a closed stdout/stderr under a rollout
 * (`2>&1 | head -3`), and SIGINT during an eval — each must end with its record on disk and
 * nothing left behind, and an interrupted eval must finish with `eval --resume`.
 */

let tmp: TempDir;
let cache: string;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-chaos-three-");
  cache = join(tmp.path, "cache");
});
afterAll(async () => {
  await removeScenarioDirs();
  await tmp?.cleanup();
});

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

describe("chaos: faults round three", () => {
  it("`rollout … 2>&1 | head -3`: the runner survives the closed pipe, writes its summary and leaves no lock, mount, cgroup or scratch", async () => {
    const s = await createScenario(tmp.path, "epipe", cache);
    const cmd = `set -o pipefail; "${process.execPath}" "${BIN}" rollout --task ${TASK} --policy gold --group-size 2 --concurrency 2 --out "${s.out}" 2>&1 | head -3`;
    const r = await execa("bash", ["-c", cmd], {
      cwd: REPO_ROOT,
      env: s.env,
      reject: false,
      stdin: "ignore",
      timeout: 600_000,
    });
    expect(String(r.stdout).split("\n").length).toBeLessThanOrEqual(3);
    expect(r.exitCode, String(r.stderr)).toBe(0);
    const summary = JSON.parse(await readFile(join(s.out, "summary.json"), "utf8"));
    expect(summary).toMatchObject({ complete: true, interrupted: false });
    expect(await exists(join(s.out, "run.lock"))).toBe(false);
    // no gc ran after it: what is left is what the runner itself left
    const left = await findLeftovers([s.tmp, await runIdOf(s.out)], s.tmp);
    expect(describeLeftovers(left)).toEqual([]);
  }, 900_000);

  // the two longest cases (about 1.5 min each on 2 cores) run at full scale only (`npm run chaos`)
  if (!FULL)
    console.log(
      "chaos faults-three: eval SIGINT + --resume, frozen core, frozen scorer and workspace full run with `npm run chaos` only (reduced run)",
    );

  it.skipIf(!FULL)(
    "SIGINT during an eval: exit 130 with report.json, report.html and summary.md written (partial); eval --resume finishes it, no trial twice",
    async () => {
      const s = await createScenario(tmp.path, "eval-sigint", cache);
      const out = join(s.root, "eval");
      const args = [
        "eval",
        "--task",
        TASK,
        "--policy",
        "gold",
        "--trials",
        "3",
        "--concurrency",
        "1",
        "--out",
        out,
      ];
      const child = s.cli(args);
      // interrupt once the first trial finished (the rest are mid-way or not started)
      const results = async () => {
        const ids = await readdir(join(out, "run", "trajectories")).catch(() => [] as string[]);
        const done = await Promise.all(
          ids.map((id) => exists(join(out, "run", "trajectories", id, "result.json"))),
        );
        return done.filter(Boolean).length;
      };
      expect(await waitFor(async () => (await results()) >= 1, 600_000, 100)).toBe(true);
      process.kill(child.pid!, "SIGINT");
      const r = await child;
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(130);
      for (const f of ["report.json", "report.html", "summary.md"])
        expect(await exists(join(out, f)), f).toBe(true);
      const partial = JSON.parse(await readFile(join(out, "report.json"), "utf8"));
      expect(partial.complete).toBe(false);
      expect(partial.trials.length).toBeGreaterThanOrEqual(1);
      expect(String(r.stderr)).toContain(`eval --resume ${out}`);

      const resumed = await s.cli(["eval", "--resume", out]);
      expect(resumed.exitCode, String(resumed.stderr).slice(-2000)).toBe(0);
      const report = JSON.parse(await readFile(join(out, "report.json"), "utf8"));
      expect(report.complete).toBe(true);
      const ids = report.trials.map((t: { trajectoryId: string }) => t.trajectoryId).sort();
      expect(ids).toEqual([0, 1, 2].map((i) => `${TASK}-t${i}`));
      // the trials finished before the SIGINT were not run again
      for (const t of partial.trials)
        expect(
          report.trials.find((x: { trajectoryId: string }) => x.trajectoryId === t.trajectoryId),
        ).toMatchObject({
          outcome: t.outcome,
          reward: t.reward,
        });
      expect(await exists(join(out, "run.lock"))).toBe(false);
    },
    1_200_000,
  );

  it.skipIf(!FULL)(
    "kill -9 of an eval after its first trial, then eval --resume (no gc run by hand): every trial once, nothing left behind",
    async () => {
      const s = await createScenario(tmp.path, "eval-kill9", cache);
      const out = join(s.root, "eval");
      const child = s.cli([
        ...["eval", "--task", TASK, "--policy", "gold", "--trials", "3", "--concurrency", "1"],
        ...["--out", out],
      ]);
      const finished = async () => {
        const ids = await readdir(join(out, "run", "trajectories")).catch(() => [] as string[]);
        const done = await Promise.all(
          ids.map((id) => exists(join(out, "run", "trajectories", id, "result.json"))),
        );
        return done.filter(Boolean).length;
      };
      expect(await waitFor(async () => (await finished()) >= 1, 600_000, 100)).toBe(true);
      const before = await finished();
      process.kill(child.pid!, "SIGKILL");
      await child.catch(() => undefined);
      // `eval --resume` takes the dead eval's lock over and sweeps what it left (as rollout does)
      const resumed = await s.cli(["eval", "--resume", out]);
      expect(resumed.exitCode, String(resumed.stderr).slice(-2000)).toBe(0);
      const report = JSON.parse(await readFile(join(out, "report.json"), "utf8"));
      expect(report.complete).toBe(true);
      const ids = report.trials.map((t: { trajectoryId: string }) => t.trajectoryId).sort();
      expect(ids).toEqual([0, 1, 2].map((i) => `${TASK}-t${i}`));
      expect(before).toBeGreaterThanOrEqual(1);
      expect(await exists(join(out, "run.lock"))).toBe(false);
      const left = await findLeftovers([s.tmp, await runIdOf(join(out, "run"))], s.tmp);
      expect(describeLeftovers(left)).toEqual([]);
    },
    1_200_000,
  );

  it("SIGINT right at an eval's banner (before any worker): the partial report is still written", async () => {
    const s = await createScenario(tmp.path, "eval-sigint-early", cache);
    const out = join(s.root, "eval");
    const child = s.cli(["eval", "--task", TASK, "--policy", "gold", "--trials", "1", "--out", out]);
    let stderr = "";
    child.stderr?.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    expect(await waitFor(async () => /^eval /m.test(stderr), 120_000, 20)).toBe(true);
    process.kill(child.pid!, "SIGINT");
    const r = await child;
    expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(130);
    for (const f of ["report.json", "report.html", "summary.md"])
      expect(await exists(join(out, f)), f).toBe(true);
    expect(JSON.parse(await readFile(join(out, "report.json"), "utf8")).complete).toBe(false);
  }, 600_000);

  it("a full snapshot cache: the error names the cache directory, the task and a next step (not a bare ENOSPC … write)", async () => {
    const s = await createScenario(tmp.path, "cache-full", cache);
    const mnt = join(s.root, "small-cache");
    if (!(await mountSmallTmpfs(mnt, "64k", "cache-full"))) return;
    try {
      const r = await execa(
        process.execPath,
        [BIN, "rollout", "--task", TASK, "--policy", "gold", "--group-size", "1", "--out", s.out],
        {
          cwd: REPO_ROOT,
          env: { ...s.env, FLAKEGYM_CACHE: mnt },
          reject: false,
          stdin: "ignore",
          timeout: 600_000,
        },
      );
      expect(r.exitCode).not.toBe(0);
      const text = `${String(r.stdout)}\n${String(r.stderr)}`;
      expect(text).toContain("E_DISK_FULL");
      expect(text).toContain(join(mnt, "snapshots"));
      // and a next step: free space, then --resume the run
      expect(text).toMatch(/free (space|what it needs)[^\n]*then --resume/);
      expect(text).not.toMatch(/^error\[ENOSPC\]/m);
      const summary = JSON.parse(await readFile(join(s.out, "summary.json"), "utf8"));
      expect(summary.stopped?.code).toBe("E_DISK_FULL");
    } finally {
      await unmountTmpfs(mnt);
    }
  }, 600_000);

  it.skipIf(!FULL)(
    "a frozen core (SIGSTOP) while the agent's command prints: infra_error, retried, the trajectory ends by a bounded time",
    async () => {
      const s = await createScenario(tmp.path, "sigstop-core", cache);
      const plan = await commandPlan(
        s.root,
        "ticks",
        "for i in $(seq 1 24); do echo tick $i; sleep 0.5; done",
      );
      const victim = `${TASK}-t0`;
      const idleS = 8;
      const t0 = Date.now();
      const child = s.cli([
        ...["rollout", "--task", TASK, "--group-size", "1", "--policy", `scripted:${plan}`],
        ...["--idle-timeout", String(idleS), "--max-infra-retries", "1", "--out", s.out],
      ]);
      let frozen: number | undefined;
      const found = await waitFor(
        async () => {
          // the core, once the command it runs (its child) prints
          const tree = await agentTree(victim, s.tmp);
          // the core itself (node running cline-core.js, after any `--require` preloads), not the
          // sandbox or supervisor naming it
          const core = tree.find((p) => /^\S*node (?:-\S+ \S+ )*\S*cline-core\.js/.test(p.cmdline));
          if (!core || !tree.some((p) => p.ppid === core.pid && p.cmdline.includes("echo tick")))
            return false;
          process.kill(core.pid, "SIGSTOP");
          frozen = core.pid;
          return true;
        },
        300_000,
        100,
      );
      expect(found, "never saw the agent's command run").toBe(true);
      // the stop takes effect when the signal is delivered (a moment later)
      const stopped = async () =>
        /State:\s+T/.test(await readFile(`/proc/${frozen}/status`, "utf8").catch(() => ""));
      expect(await waitFor(stopped, 5_000, 50)).toBe(true);
      const r = await child;
      const took = (Date.now() - t0) / 1000;
      const res = JSON.parse(await readFile(join(s.out, "trajectories", victim, "result.json"), "utf8"));
      expect(res.infraRetries.length, String(r.stderr).slice(-2000)).toBe(1);
      expect(res.infraRetries[0].detail).toMatch(/the Cline core stopped answering/);
      expect(res.outcome.kind).toBe("completed");
      // bounded: the frozen attempt ends about idle + probe after the freeze, not 2× a limit later
      expect(took).toBeLessThan(240);
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(0);
    },
    600_000,
  );

  it.skipIf(!FULL)(
    "the runner itself stopped (SIGSTOP) longer than the idle limit, then continued: the trajectory completes, nothing blamed on the agent",
    async () => {
      const s = await createScenario(tmp.path, "sigstop-runner", cache);
      const plan = await commandPlan(
        s.root,
        "ticks-runner",
        "for i in $(seq 1 30); do echo tick $i; sleep 0.5; done",
      );
      const victim = `${TASK}-t0`;
      const child = s.cli([
        ...["rollout", "--task", TASK, "--group-size", "1", "--policy", `scripted:${plan}`],
        ...["--idle-timeout", "8", "--max-infra-retries", "0", "--out", s.out],
      ]);
      const running = await waitFor(
        async () => (await agentTree(victim, s.tmp)).some((p) => p.cmdline.includes("echo tick")),
        300_000,
        100,
      );
      expect(running, "never saw the agent's command run").toBe(true);
      // the whole runner (its driver watchdog and gateway thread) stops for 12 s > the 8 s idle limit
      process.kill(child.pid!, "SIGSTOP");
      await new Promise((r) => setTimeout(r, 12_000));
      process.kill(child.pid!, "SIGCONT");
      const r = await child;
      const res = JSON.parse(await readFile(join(s.out, "trajectories", victim, "result.json"), "utf8"));
      expect(res.outcome, String(r.stderr).slice(-2000)).toMatchObject({ kind: "completed" });
      expect(res.infraRetries).toEqual([]);
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(0);
    },
    600_000,
  );

  it("a fork bomb ends as the pids limit (limits_exceeded/pids from the cgroup's pids.events), never retried", async () => {
    const s = await createScenario(tmp.path, "fork-bomb", cache);
    const plan = await commandPlan(s.root, "bomb", "b(){ b | b & }; b");
    const r = await s.cli([
      ...["rollout", "--task", TASK, "--group-size", "1", "--policy", `scripted:${plan}`],
      ...["--max-infra-retries", "2", "--idle-timeout", "60", "--out", s.out],
    ]);
    const res = JSON.parse(await readFile(join(s.out, "trajectories", `${TASK}-t0`, "result.json"), "utf8"));
    expect(res.outcome, String(r.stderr).slice(-2000)).toMatchObject({
      kind: "limits_exceeded",
      limit: "pids",
    });
    expect(res.outcome.detail).toMatch(/pids\.events/);
    expect(res.infraRetries).toEqual([]);
    const left = await findLeftovers([s.tmp, await runIdOf(s.out)], s.tmp);
    expect(describeLeftovers(left)).toEqual([]);
  }, 600_000);

  it.skipIf(!FULL)(
    "the agent fills its workspace (dd of zeros): limits_exceeded/disk from the cgroup's memory.stat shmem, not the memory limit; never retried",
    async () => {
      const s = await createScenario(tmp.path, "workspace-full", cache);
      const plan = await commandPlan(s.root, "fill", "dd if=/dev/zero of=big bs=1M count=100000");
      const r = await s.cli([
        ...["rollout", "--task", TASK, "--group-size", "1", "--policy", `scripted:${plan}`],
        ...["--max-infra-retries", "1", "--idle-timeout", "60", "--out", s.out],
      ]);
      const res = JSON.parse(
        await readFile(join(s.out, "trajectories", `${TASK}-t0`, "result.json"), "utf8"),
      );
      expect(res.outcome, String(r.stderr).slice(-2000)).toMatchObject({
        kind: "limits_exceeded",
        limit: "disk",
      });
      expect(res.outcome.detail).toMatch(/memory\.stat shmem/);
      expect(res.infraRetries).toEqual([]);
      const left = await findLeftovers([s.tmp, await runIdOf(s.out)], s.tmp);
      expect(describeLeftovers(left)).toEqual([]);
    },
    600_000,
  );

  it.skipIf(!FULL)(
    "a frozen scorer sandbox (SIGSTOP of its bwrap and children): infra_error retried, then the gold answer's reward 1 — not a 0 blamed on the agent",
    async () => {
      const s = await createScenario(tmp.path, "sigstop-scorer", cache);
      const victim = `${TASK}-t0`;
      const child = s.cli([
        ...["rollout", "--task", TASK, "--group-size", "1", "--policy", "gold", "--test-timeout", "20"],
        ...["--max-infra-retries", "1", "--out", s.out],
      ]);
      let stopped: number[] = [];
      const found = await waitFor(
        async () => {
          const table = await processTable();
          const scorer = table.find(
            (p) =>
              /^(\S*\/)?bwrap /.test(p.cmdline) &&
              p.cmdline.includes(`${victim}-score`) &&
              p.cmdline.includes(s.tmp),
          );
          if (!scorer) return false;
          const tree = new Set([scorer.pid]);
          for (const p of table) if (tree.has(p.ppid)) tree.add(p.pid);
          stopped = [...tree];
          for (const pid of stopped) process.kill(pid, "SIGSTOP");
          return true;
        },
        300_000,
        50,
      );
      expect(found, "never saw the scorer's sandbox").toBe(true);
      const r = await child;
      for (const pid of stopped) {
        try {
          process.kill(pid, "SIGCONT");
        } catch {
          // gone: killed at its deadline
        }
      }
      const res = JSON.parse(await readFile(join(s.out, "trajectories", victim, "result.json"), "utf8"));
      expect(res.infraRetries.length, String(r.stderr).slice(-2000)).toBe(1);
      expect(res.infraRetries[0].detail).toMatch(/frozen from outside its sandbox/);
      expect(res.reward).toBe(1);
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(0);
    },
    600_000,
  );
  it.skipIf(!FULL)(
    "a 429 whose Retry-After is past the trajectory's remaining time: the model server's (policy_error), not the agent's timeout",
    async () => {
      const s = await createScenario(tmp.path, "429-wait", cache);
      const limited = await startFaultUpstream("429-wait", { retryAfterS: 25 });
      try {
        const r = await s.cli([
          ...[
            "rollout",
            "--task",
            TASK,
            "--group-size",
            "1",
            "--policy",
            `openai:${limited.baseUrl}#chaos-model`,
          ],
          ...["--timeout", "15", "--max-infra-retries", "0", "--out", s.out],
        ]);
        const res = JSON.parse(
          await readFile(join(s.out, "trajectories", `${TASK}-t0`, "result.json"), "utf8"),
        );
        expect(res.outcome, String(r.stderr).slice(-2000)).toMatchObject({ kind: "policy_error" });
        expect(res.outcome.detail).toMatch(/429/);
      } finally {
        await limited.close();
      }
    },
    600_000,
  );

  it.skipIf(!FULL)(
    "a model server streaming a tiny event every second past the trajectory's wall clock: the model server's (policy_error), not the agent's timeout",
    async () => {
      const s = await createScenario(tmp.path, "trickle", cache);
      const trickle = await startFaultUpstream("trickle");
      try {
        const t0 = Date.now();
        const r = await s.cli([
          ...["rollout", "--task", TASK, "--group-size", "1"],
          ...["--policy", `openai:${trickle.baseUrl}#chaos-model`],
          ...["--timeout", "20", "--max-infra-retries", "0", "--out", s.out],
        ]);
        const res = JSON.parse(
          await readFile(join(s.out, "trajectories", `${TASK}-t0`, "result.json"), "utf8"),
        );
        expect(res.outcome, String(r.stderr).slice(-2000)).toMatchObject({ kind: "policy_error" });
        expect(res.outcome.detail).toMatch(/still answering when the trajectory's time ran out/);
        expect((Date.now() - t0) / 1000).toBeLessThan(180);
        const left = await findLeftovers([s.tmp, await runIdOf(s.out)], s.tmp);
        expect(describeLeftovers(left)).toEqual([]);
      } finally {
        await trickle.close();
      }
    },
    600_000,
  );

  it.skipIf(!FULL)(
    "a frozen agent sandbox (SIGSTOP from the host of its bwrap and every process in it) while the core waits on the model, wall clock before idle: infra_error, retried, then completed",
    async () => {
      const { res, r, took, left } = await frozenSandboxRun("sigstop-sandbox", treePick.all, [
        ...["--timeout", "60", "--idle-timeout", "600"],
      ]);
      expect(res.infraRetries.length, String(r.stderr).slice(-2000)).toBe(1);
      expect(res.infraRetries[0].detail).toMatch(/frozen from outside its sandbox/);
      expect(res.outcome.kind).toBe("completed");
      expect(took).toBeLessThan(240);
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(0);
      expect(left).toEqual([]);
    },
    600_000,
  );

  it.skipIf(!FULL)(
    "a frozen supervisor (SIGSTOP from the host of it and its sandbox's bwrap; the core answers) while the core waits on the model: infra_error, retried, then completed",
    async () => {
      const { res, r, left } = await frozenSandboxRun("sigstop-supervisor", treePick.bwrapAndSupervisor, [
        ...["--timeout", "300", "--idle-timeout", "20"],
      ]);
      expect(res.infraRetries.length, String(r.stderr).slice(-2000)).toBe(1);
      expect(res.infraRetries[0].detail).toMatch(/frozen from outside its sandbox/);
      expect(res.outcome.kind).toBe("completed");
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(0);
      expect(left).toEqual([]);
    },
    600_000,
  );
});

type Tree = Awaited<ReturnType<typeof agentTree>>;

/**
 * Frozen from the host while the core waits on a slow model answer: `pick` chooses which processes
 * of the agent sandbox's tree are stopped. Returns the trajectory's result, the run, how long it
 * took (s) and what it left behind.
 */
async function frozenSandboxRun(name: string, pick: (tree: Tree) => number[], limits: readonly string[]) {
  const s = await createScenario(tmp.path, name, cache);
  const slow = await startFaultUpstream("slow", { delayMs: 4000 });
  const victim = `${TASK}-t0`;
  const t0 = Date.now();
  const child = s.cli([
    ...["rollout", "--task", TASK, "--group-size", "1", "--policy", `openai:${slow.baseUrl}#chaos-model`],
    ...limits,
    ...["--max-infra-retries", "1", "--out", s.out],
  ]);
  let stopped: number[] = [];
  try {
    // the core waits on its first answer: freeze what `pick` names, from outside the sandbox
    const found = await waitFor(
      async () => {
        if (slow.requests < 1) return false;
        stopped = pick(await agentTree(victim, s.tmp));
        for (const pid of stopped) process.kill(pid, "SIGSTOP");
        return stopped.length > 0;
      },
      300_000,
      50,
    );
    expect(found, "never saw the core wait on the model").toBe(true);
    const r = await child;
    const res = JSON.parse(await readFile(join(s.out, "trajectories", victim, "result.json"), "utf8"));
    const left = await findLeftovers([s.tmp, await runIdOf(s.out)], s.tmp);
    return { res, r, took: (Date.now() - t0) / 1000, left: describeLeftovers(left) };
  } finally {
    for (const pid of stopped) {
      try {
        process.kill(pid, "SIGCONT");
      } catch {
        // gone: killed with its worker
      }
    }
    await slow.close();
  }
}

const isBwrap = (p: { cmdline: string }) => /^(\S*\/)?bwrap /.test(p.cmdline);

/** Which processes of an agent sandbox's tree a freeze stops. */
const treePick = {
  all: (tree: Tree) => tree.map((p) => p.pid),
  /** the sandbox's host-side bwrap and the supervisor, not the core nor what it runs */
  bwrapAndSupervisor: (tree: Tree) => [
    ...tree.filter((p) => isBwrap(p) && tree.every((q) => q.pid !== p.ppid)).map((p) => p.pid),
    ...tree.filter((p) => !isBwrap(p) && p.cmdline.includes("cline-supervisor.mjs")).map((p) => p.pid),
  ],
};
