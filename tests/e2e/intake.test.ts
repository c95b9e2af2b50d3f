import { cp, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  buildSnapshot,
  commitTree,
  createLocalBackend,
  forkSnapshot,
  type LoadedTask,
  loadTaskDir,
  runHiddenTests,
  snapshotSpecOfTask,
} from "@flakegym/runner";
import { makeTempDir, REPO_ROOT, runCli, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/**
 * Intake end to end. A SWE-bench-style row over a local fixture repository (no GitHub here) is
 * imported with `flakegym tasks import` and validated for real (`flakegym validate`: Cline with the
 * gold policy scores 1, with the empty policy 0). Catalog tasks exported as Harbor task
 * directories and imported back keep their meaning: inside the sandbox, without Cline, their hidden
 * tests (now Harbor's test.sh) fail on the base and pass with the reference patch.
 */

const FIXTURES = join(REPO_ROOT, "tests/fixtures/swebench");

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-intake-");
});
afterAll(async () => {
  await tmp.cleanup();
});

/** The fixture's first row (minicalc), its repository made a git repo at the row's base_commit. */
async function minicalcDataset(): Promise<string> {
  const repo = join(tmp.path, "minicalc");
  await cp(join(FIXTURES, "minicalc"), repo, { recursive: true });
  const commit = await commitTree(repo);
  const row = JSON.parse((await readFile(join(FIXTURES, "swebench-sample.jsonl"), "utf8")).split("\n")[0]!);
  expect(row.base_commit).toBe(commit);
  // a second row whose install edits a tracked file, as SWE-bench's pre_install steps do (`sed -i`)
  const pinned = {
    ...row,
    instance_id: "minicalc__minicalc-2",
    install: [`sed -i 's/^# minicalc$/${PINNED}/' README.md`],
  };
  const file = join(tmp.path, "rows.jsonl");
  await writeFile(
    file,
    [row, pinned].map((r) => `${JSON.stringify({ ...r, repo: `file://${repo}` })}\n`).join(""),
  );
  return file;
}

const PINNED = "# minicalc (pinned by the install step)";

/** Every diff.patch under `dir`, by path. */
async function diffsUnder(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const name of await readdir(dir, { recursive: true })) {
    if (name.endsWith("diff.patch")) out.set(name, await readFile(join(dir, name), "utf8"));
  }
  return out;
}

/** Hidden tests before and after the reference patch, in the sandbox, from a real snapshot fork. */
async function beforeAfter(task: LoadedTask, name: string) {
  const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
  const backend = createLocalBackend({ stateDir: join(tmp.path, "workers") });
  const run = async (withSolution: boolean) => {
    const fork = await forkSnapshot(snapshot, {
      dest: join(tmp.path, "forks", `${name}-${withSolution}`),
      quotaMb: task.spec.limits.diskMb,
    });
    const worker = await backend.start({
      runId: "intake-test",
      taskId: task.spec.id,
      trajectoryId: withSolution ? "after" : "before",
      profile: task.spec.profile,
      workspace: fork.workspace,
      depsDir: fork.deps,
      // as a rollout's workers have it (rollout/worker-specs.ts aliasSpecOf): the workspace at the task's workdir
      ...(task.spec.workdir && task.spec.workdir !== "/workspace"
        ? { workspaceAlias: task.spec.workdir }
        : {}),
      gateway: {},
      limits: { ...task.spec.limits, wallClockMs: 300_000 },
      agent: false,
    });
    try {
      return await runHiddenTests(worker, task, { withSolution, timeoutMs: 240_000 });
    } finally {
      await worker.stop();
      await fork.release();
    }
  };
  // at once, in their own forks and workers (both end before a failure is thrown)
  const [before, after] = (await Promise.allSettled([run(false), run(true)])).map((s) => {
    if (s.status === "rejected") throw s.reason;
    return s.value;
  });
  return { before: before!, after: after! };
}

// The two intakes run at once (their own dirs under tmp): each spends much of its time waiting.
describe.concurrent("SWE-bench-style intake", () => {
  it("a row over a local fixture repo: imported, then validate scores gold 1 and empty 0", async () => {
    const dataset = await minicalcDataset();
    const catalog = join(tmp.path, "swebench-tasks");
    const imp = await runCli(["tasks", "import", "--dataset", dataset, "--out", catalog]);
    expect(imp.exitCode, imp.stderr).toBe(0);
    expect(imp.stdout).toContain("imported minicalc__minicalc-1 (python, network none)");
    expect(imp.stdout).toContain("imported minicalc__minicalc-2 (python, network required)");

    const r = await runCli(
      [
        "validate",
        "--all",
        "--catalog",
        catalog,
        "--no-cheats",
        "--repeat",
        "1",
        "--out",
        join(tmp.path, "run"),
      ],
      { timeoutMs: 600_000 },
    );
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
    // an imported row's hidden tests are guarded too (GUARDED n/n: pytest rows by externalized assertions)
    expect(r.stdout).toMatch(
      /^minicalc__minicalc-1\s+1\.00\s+0\.00\s+-\s+0\s+(\d+)\/\1 \(\1 externalized\)\s+PASS$/m,
    );
    // the install's edit is the agent's base: gold still scores 1 and no trajectory's diff holds it
    expect(r.stdout).toMatch(
      /^minicalc__minicalc-2\s+1\.00\s+0\.00\s+-\s+0\s+(\d+)\/\1 \(\1 externalized\)\s+PASS$/m,
    );
    const diffs = await diffsUnder(join(tmp.path, "run"));
    expect([...diffs.keys()].some((k) => k.includes("minicalc__minicalc-2"))).toBe(true);
    for (const [name, diff] of diffs) {
      expect(diff, name).not.toContain("README.md");
      expect(diff, name).not.toContain("pinned by the install step");
    }
  }, 660_000);
});

describe.concurrent("Harbor task directories", () => {
  it("imported fixtures validate through rollout's scoring: the verdict guarded by its decoy twin, or failed as unguarded", async () => {
    const ds = join(tmp.path, "harbor-fixtures");
    for (const id of ["hello-greeting", "empty-workspace"])
      await cp(join(REPO_ROOT, "tests/fixtures/harbor", id), join(ds, id), { recursive: true });
    const catalog = join(tmp.path, "harbor-fixture-tasks");
    const imp = await runCli(["tasks", "import", "--dataset", ds, "--out", catalog]);
    expect(imp.exitCode, imp.stderr).toBe(0);
    const out = join(tmp.path, "harbor-validate");
    const r = await runCli(
      ["validate", "--all", "--catalog", catalog, "--no-cheats", "--repeat", "1", "--out", out],
      {
        timeoutMs: 600_000,
      },
    );
    expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(1);
    expect(r.stdout).toMatch(/^hello-greeting\s+1\.00\s+0\.00\s+-\s+0\s+1\/1\s+PASS$/m);
    expect(r.stdout).toMatch(/^empty-workspace\s+1\.00\s+0\.00\s+-\s+0\s+0\/1\s+FAIL$/m);
    expect(r.stdout).toMatch(
      /without a decoy .*eval_cmd \(no hidden file is source the decoy code reads.*--allow-unguarded/,
    );
    const gold = JSON.parse(
      await readFile(join(out, "hello-greeting/trajectories/hello-greeting-t0/score.json"), "utf8"),
    );
    expect(gold).toMatchObject({ reward: 1, twin: { passed: false }, decoys: { guarded: ["eval_cmd"] } });
  }, 660_000);

  it("a catalog task exported and imported back: its test.sh fails on the base and passes with the reference", async () => {
    const harbor = join(tmp.path, "harbor");
    const exp = await runCli(["tasks", "export", "--harbor", harbor, "--task", "tinyini-interpolation"]);
    expect(exp.exitCode, exp.stderr).toBe(0);
    const catalog = join(tmp.path, "harbor-tasks");
    const check = await runCli(["tasks", "check", "--dataset", harbor]);
    expect(check.stdout).toContain("(harbor): 1 task dirs, 1 accepted, 0 rejected");
    const imp = await runCli(["tasks", "import", "--dataset", harbor, "--out", catalog]);
    expect(imp.exitCode, imp.stderr).toBe(0);
    for (const id of ["tinyini-interpolation"]) {
      const task = await loadTaskDir(join(catalog, id));
      expect(task.spec.tests.run.kind).toBe("eval_cmd");
      const { before, after } = await beforeAfter(task, id);
      expect(before.solved, before.results.map((x) => x.tail).join("\n")).toBe(false);
      expect(after.solved, after.results.map((x) => x.tail).join("\n")).toBe(true);
    }
  }, 600_000);
});
