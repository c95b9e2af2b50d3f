import { cp, mkdir, readFile, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, type TempDir, waitFor } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { observeRun } from "./src/observe.js";
import {
  checkScenario,
  createScenario,
  removeScenarioDirs,
  runIdOf,
  slowPlan,
  TASK,
} from "./src/scenario.js";

/**
 * Faults of the run directory itself, with the real CLI: a second runner or a resume on a live run's
 * directory, output paths no run can use, and a signal while the run waits on something that never
 * returns. Each refusal is checked to come before anything starts (no banner, no gc).
 */

let tmp: TempDir;
let cache: string;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-chaos-rundir-");
  cache = join(tmp.path, "cache");
});
afterAll(async () => {
  await removeScenarioDirs();
  await tmp?.cleanup();
});

/** Nothing of a run started: no banner line, no gc line. */
const startedNothing = (stderr: string) => !/^(rollout|resuming) |^gc: /m.test(stderr);

describe("chaos: the run directory", () => {
  it("a second runner and a --resume on a live run's directory are refused (exit 2, holder named); nothing duplicated", async () => {
    const s = await createScenario(tmp.path, "two-writers", cache);
    const plan = await slowPlan(s.root, 6);
    const args = ["rollout", "--task", TASK, "--group-size", "2", "--concurrency", "2"];
    const first = s.cli([...args, "--policy", `scripted:${plan}`, "--out", s.out]);
    const live = await waitFor(
      async () =>
        (await readFile(join(s.out, "trajectories", `${TASK}-t0`, "turns.jsonl"), "utf8").catch(() => ""))
          .length > 0,
      300_000,
      100,
    );
    expect(live).toBe(true);
    const before = await observeRun(s.out);
    const [second, resume] = await Promise.all([
      s.cli([...args, "--policy", "gold", "--out", s.out], 60_000),
      s.cli(["rollout", "--resume", s.out], 60_000),
    ]);
    for (const r of [second, resume]) {
      expect(r.exitCode, String(r.stderr)).toBe(2);
      expect(String(r.stderr)).toContain("E_RUN_LOCKED");
      expect(String(r.stderr)).toContain(`pid ${first.pid} on `);
      expect(startedNothing(String(r.stderr))).toBe(true);
    }
    // the live run's unfinished trajectories were not touched
    const during = await observeRun(s.out);
    for (const id of before.results.keys()) expect(during.results.has(id)).toBe(true);
    const r = await first;
    expect(r.exitCode, String(r.stderr).slice(-2000)).toBe(0);
    const expected = [0, 1].map((i) => ({ trajectoryId: `${TASK}-t${i}`, kinds: ["completed"] }));
    const checked = await checkScenario(s, {
      fault: "two writers",
      runs: 2,
      faults: 2,
      expected,
      runId: await runIdOf(s.out),
    });
    expect(checked.problems).toEqual([]);
    // the lock went with its holder: a resume now runs (and has nothing to do)
    const after = await s.cli(["rollout", "--resume", s.out], 120_000);
    expect(after.exitCode, String(after.stderr).slice(-2000)).toBe(0);
  }, 900_000);

  it("a runner killed with -9, its task file edited: --resume refuses naming the file; restored, it finishes", async () => {
    const s = await createScenario(tmp.path, "changed-task", cache);
    const catalog = join(s.root, "catalog");
    await cp(join(REPO_ROOT, "packages/runner/catalog", TASK), join(catalog, TASK), { recursive: true });
    const taskJson = join(catalog, TASK, "task.json");
    const original = await readFile(taskJson, "utf8");
    const plan = await slowPlan(s.root, 20);
    const args = ["rollout", "--catalog", catalog, "--task", TASK, "--group-size", "1"];
    const first = s.cli([...args, "--policy", `scripted:${plan}`, "--out", s.out]);
    const live = await waitFor(
      async () =>
        (await readFile(join(s.out, "trajectories", `${TASK}-t0`, "turns.jsonl"), "utf8").catch(() => ""))
          .length > 0,
      300_000,
      100,
    );
    expect(live).toBe(true);
    process.kill(-first.pid!, "SIGKILL");
    await first;
    const spec = JSON.parse(original);
    await writeFile(taskJson, JSON.stringify({ ...spec, prompt: `${spec.prompt}\nAlso add a README.` }));
    const refused = await s.cli(["rollout", "--resume", s.out], 120_000);
    expect(refused.exitCode, String(refused.stderr)).toBe(2);
    expect(String(refused.stderr)).toContain("E_INPUT_CHANGED");
    expect(String(refused.stderr)).toContain(`changed: task ${TASK}/task.json (${taskJson})`);
    expect(startedNothing(String(refused.stderr))).toBe(true);
    await writeFile(taskJson, original);
    // the dead runner's lock is taken over; the run finishes with its own task
    const resumed = await s.cli(["rollout", "--resume", s.out]);
    expect(resumed.exitCode, String(resumed.stderr).slice(-2000)).toBe(0);
    const checked = await checkScenario(s, {
      fault: "task changed",
      runs: 1,
      faults: 2,
      expected: [{ trajectoryId: `${TASK}-t0`, kinds: ["completed"] }],
      runId: await runIdOf(s.out),
    });
    expect(checked.problems).toEqual([]);
  }, 900_000);

  it("a runner killed with -9, a file of its cached snapshot tree edited: --resume refuses that task naming the file; restored, it finishes", async () => {
    const s = await createScenario(tmp.path, "changed-tree", cache);
    const plan = await slowPlan(s.root, 2);
    const args = ["rollout", "--task", TASK, "--group-size", "3", "--concurrency", "2"];
    const first = s.cli([...args, "--policy", `scripted:${plan}`, "--out", s.out]);
    const oneDone = await waitFor(
      async () => ((await observeRun(s.out).catch(() => undefined))?.results.size ?? 0) >= 1,
      300_000,
      100,
    );
    expect(oneDone).toBe(true);
    process.kill(-first.pid!, "SIGKILL");
    await first;
    expect((await observeRun(s.out)).results.size, "the kill came after the run ended").toBeLessThan(3);
    const manifest = JSON.parse(await readFile(join(s.out, "run.json"), "utf8"));
    const key = manifest.tasks[TASK].snapshotKey as string;
    expect(manifest.tasks[TASK].treeDigest).toMatch(/^sha256:/);
    const file = join(cache, "flakegym", "snapshots", key, "tree", "workspace", "src", "index.js");
    const original = await readFile(file);
    const times = await stat(file);
    await writeFile(file, `${original}\n// edited after the kill\n`);
    const refused = await s.cli(["rollout", "--resume", s.out]);
    expect(refused.exitCode, String(refused.stderr).slice(-2000)).not.toBe(0);
    const said = `${refused.stdout}\n${refused.stderr}`;
    expect(said).toContain("E_SNAPSHOT_CHANGED");
    expect(said).toContain("workspace/src/index.js");
    expect(await readFile(join(s.out, "summary.json"), "utf8")).toContain("E_SNAPSHOT_CHANGED");
    const before = await observeRun(s.out);
    // restored as `cp -a` of a backup would: its content and times
    await writeFile(file, original);
    await utimes(file, times.atime, times.mtime);
    const resumed = await s.cli(["rollout", "--resume", s.out]);
    expect(resumed.exitCode, String(resumed.stderr).slice(-2000)).toBe(0);
    const after = await observeRun(s.out);
    for (const [id, res] of before.results) expect(after.results.get(id)).toEqual(res);
    const checked = await checkScenario(s, {
      fault: "snapshot tree edited",
      runs: 3,
      faults: 2,
      expected: [0, 1, 2].map((i) => ({ trajectoryId: `${TASK}-t${i}`, kinds: ["completed"] })),
      runId: await runIdOf(s.out),
    });
    expect(checked.problems).toEqual([]);
  }, 900_000);

  it("output paths no run can use are refused before anything starts, naming the flag", async () => {
    const s = await createScenario(tmp.path, "bad-out", cache);
    const file = join(s.root, "a-file");
    await writeFile(file, "x");
    const cases: [string, RegExp][] = [
      ["", /--out is empty/],
      ["/proc/x", /--out \/proc\/x: .*proc filesystem/],
      [file, /--out .*a-file: .* is a file/],
      [join(file, "sub"), /--out .* is under .*a-file, which is a file/],
    ];
    for (const [out, message] of cases) {
      const t0 = Date.now();
      const r = await s.cli(["rollout", "--task", TASK, "--policy", "gold", "--out", out], 60_000);
      expect(r.exitCode, `--out '${out}': ${String(r.stderr)}`).toBe(2);
      expect(String(r.stderr)).toMatch(message);
      expect(startedNothing(String(r.stderr))).toBe(true);
      expect(Date.now() - t0).toBeLessThan(30_000);
    }
  }, 300_000);

  it("a signal ends the run even while it waits on a read that never returns", async () => {
    const s = await createScenario(tmp.path, "signal-hang", cache);
    // a task file that is a FIFO with no writer: its open() blocks an I/O thread for ever
    const catalog = join(s.root, "catalog");
    await mkdir(join(catalog, "stuck"), { recursive: true });
    const fifo = await execa("mkfifo", [join(catalog, "stuck", "task.json")], { reject: false });
    if (fifo.exitCode !== 0) {
      console.log(`chaos signal-hang: skipped: mkfifo failed (${String(fifo.stderr).trim()})`);
      return;
    }
    const child = s.cli([
      "rollout",
      "--catalog",
      catalog,
      "--task",
      "stuck",
      "--policy",
      "gold",
      "--out",
      s.out,
    ]);
    await new Promise((r) => setTimeout(r, 3_000));
    const t0 = Date.now();
    process.kill(child.pid!, "SIGTERM");
    const r = await child;
    expect(Date.now() - t0).toBeLessThan(25_000);
    expect(r.isTerminated || r.exitCode === 130 || r.exitCode === 143, String(r.stderr)).toBe(true);
    expect(String(r.stderr)).toMatch(/still stopping after \d+ s: exiting now/);
  }, 120_000);
});
