import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { makeTempDir, runCli, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readRun, readScore } from "./rollout-helpers.js";

/**
 * `flakegym rollout --dataset` end to end: a JSONL dataset whose rows point at a local git
 * repository made here (a tiny node package with a bug and a `node --test` suite), one row the
 * schema rejects and one row whose repository is a URL nobody answers. The real CLI, the real
 * Cline core in bubblewrap workers, a scripted fix and the empty policy; the reward comes from
 * --build-cmd alone (dataset rows carry no hidden tests).
 */

let tmp: TempDir;
let dataset: string;
let env: NodeJS.ProcessEnv;
let commit: string;

const ADD_BUGGY = "export function add(a, b) {\n  return a - b;\n}\n";
const ADD_FIXED = "export function add(a, b) {\n  return a + b;\n}\n";
const TEST = [
  'import { test } from "node:test";',
  'import assert from "node:assert/strict";',
  'import { add } from "../src/add.js";',
  'test("adds", () => assert.equal(add(2, 3), 5));',
  "",
].join("\n");
const BUILD_CMD = "node --test test/add.test.mjs";

/** A port with nothing listening (bound, then closed). */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

const row = (id: string, fields: Record<string, unknown>) =>
  JSON.stringify({
    id,
    language: "JavaScript",
    conversations: [
      { from: "system", value: "You are a coding agent." },
      { from: "human", value: "src/add.js subtracts instead of adding. Fix add() so `node --test` passes." },
    ],
    ...fields,
  });

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-dataset-");
  const repo = join(tmp.path, "repos", "calc");
  await mkdir(join(repo, "src"), { recursive: true });
  await mkdir(join(repo, "test"), { recursive: true });
  await writeFile(join(repo, "package.json"), '{ "name": "calc", "type": "module", "version": "1.0.0" }\n');
  await writeFile(join(repo, "src/add.js"), ADD_BUGGY);
  await writeFile(join(repo, "test/add.test.mjs"), TEST);
  const g = (args: string[]) =>
    execa("git", args, {
      cwd: repo,
      env: {
        GIT_CONFIG_GLOBAL: "/dev/null",
        GIT_CONFIG_NOSYSTEM: "1",
        GIT_AUTHOR_NAME: "t",
        GIT_AUTHOR_EMAIL: "t@example.test",
        GIT_COMMITTER_NAME: "t",
        GIT_COMMITTER_EMAIL: "t@example.test",
      },
    });
  await g(["init", "-q", "-b", "main"]);
  await g(["add", "-A"]);
  await g(["commit", "-q", "--no-gpg-sign", "-m", "calc with a bug"]);
  commit = (await g(["rev-parse", "HEAD"])).stdout.trim();

  dataset = join(tmp.path, "rows.jsonl");
  const port = await closedPort();
  await writeFile(
    dataset,
    [
      row("calc-fix", { repo_url: "./repos/calc", base_commit: commit }),
      JSON.stringify({ id: "bad-1", repo_name: "acme/widget", language: "Go" }), // no conversations
      row("net-1", { repo_url: `http://127.0.0.1:${port}/acme/widget.git` }),
      row("calc-branch", { repo_url: "./repos/calc", branch: "main" }),
      row("calc-beyond-limit", { repo_url: "./repos/calc" }),
      "",
    ].join("\n"),
  );
  await writeFile(
    join(tmp.path, "fix.json"),
    JSON.stringify({
      version: 1,
      turns: [
        { tool_calls: [{ name: "write_to_file", arguments: { path: "src/add.js", content: ADD_FIXED } }] },
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "add() adds now" } }] },
      ],
    }),
  );
  env = { ...process.env, FLAKEGYM_POLICY: "", FLAKEGYM_CACHE: join(tmp.path, "cache") };
});
afterAll(async () => {
  await tmp.cleanup();
});

describe("flakegym rollout --dataset (real core, local git repos)", () => {
  it("rolls out the first --limit rows: bad row reported, network row fails fast, local rows rewarded by the build term; resume works and refuses a changed file", async () => {
    const out = join(tmp.path, "run");
    const args = [
      "rollout",
      "--dataset",
      dataset,
      "--limit",
      "3",
      "--group-size",
      "2",
      // every trajectory in one wave: each spends much of its time waiting (boot, sandbox, scoring)
      "--concurrency",
      "4",
      "--policy",
      `scripted:${join(tmp.path, "fix.json")}`,
      "--policy",
      "empty",
      "--build-cmd",
      BUILD_CMD,
      "--out",
      out,
    ];
    const started = Date.now();
    const r = await runCli(args, { env, timeoutMs: 300_000 });
    // a task that could not run (the network row) makes the exit status 1
    expect(r.exitCode, r.stderr).toBe(1);
    expect(r.stderr).toContain(`${dataset}:2: [bad-1] field 'conversations': missing`);
    expect(r.stderr).toMatch(/3 row\(s\) of .*rows\.jsonl × 2/);
    expect(r.stdout).toMatch(/net-1 could not run: E_NETWORK_REQUIRED: row .net-1./);
    expect(r.stdout).toMatch(/dataset .*rows\.jsonl: 5 rows, 4 accepted, 1 rejected, 3 rolled out/);

    const run = await readRun(out);
    expect(run.manifest.config.tasks).toEqual(["calc-fix", "net-1", "calc-branch"]);
    expect(run.manifest.config.dataset).toEqual({
      file: dataset,
      sha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      format: "jsonl",
      limit: 3,
    });
    expect(run.manifest.config.weights).toMatchObject({ build: 1 });
    expect(run.manifest.tasks["calc-fix"]).toMatchObject({
      rowId: "calc-fix",
      datasetRow: 1,
      profile: "node",
      snapshotKey: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // both local rows are the same repository at the same commit: one snapshot
    expect(run.manifest.tasks["calc-branch"]?.snapshotKey).toBe(run.manifest.tasks["calc-fix"]?.snapshotKey);

    const s = run.summary!;
    expect(s.dataset).toMatchObject({ file: dataset, rows: 5, accepted: 4, rejected: 1, used: 3 });
    expect(s.dataset?.rejectedRows).toEqual([
      { row: 2, field: "conversations", reason: "missing", id: "bad-1" },
    ]);
    const byTask = Object.fromEntries(s.tasks.map((t) => [t.taskId, t]));
    expect(byTask["net-1"]).toMatchObject({
      trajectories: 0,
      group: "missing",
      error: {
        code: "E_NETWORK_REQUIRED",
        message: expect.stringMatching(
          /row 'net-1' .*rows\.jsonl row 3.*needs network: cannot reach http:\/\/127\.0\.0\.1/,
        ),
      },
    });
    for (const id of ["calc-fix", "calc-branch"]) {
      // trajectory 0 ran the scripted fix, trajectory 1 the empty policy
      expect(byTask[id]).toMatchObject({ rewards: [1, 0], group: "written" });
      const fixed = await readScore(out, `${id}-t0`);
      expect(fixed.terms).toEqual([
        expect.objectContaining({
          name: "build",
          weight: 1,
          value: 1,
          detail: expect.stringContaining(BUILD_CMD),
        }),
      ]);
      expect(fixed.tests).toBeUndefined();
      const untouched = await readScore(out, `${id}-t1`);
      expect(untouched.terms.map((t) => [t.name, t.value])).toEqual([["build", 0]]);
    }
    expect(run.groups.map((g) => [g.group_overrides?.group_id, g.scores])).toEqual(
      expect.arrayContaining([
        [`${run.manifest.runId}:calc-fix`, [1, 0]],
        [`${run.manifest.runId}:calc-branch`, [1, 0]],
      ]),
    );
    expect(run.groups[0]!.group_overrides?.provenance).toMatchObject({
      rowId: expect.stringMatching(/^calc-/),
    });
    expect(run.samples).toHaveLength(4);
    expect(run.samples.find((x) => x.trajectory_id === "calc-fix-t0")?.completion).toContain("return a + b");
    expect(run.metrics.map((m) => m.trajectory_id).sort()).toEqual([
      "calc-branch-t0",
      "calc-branch-t1",
      "calc-fix-t0",
      "calc-fix-t1",
    ]);
    // the network row failed fast (the probe), it did not wait for a clone to time out
    expect(Date.now() - started).toBeLessThan(300_000);

    // resume: the stored rows from the unchanged file; nothing finished runs again
    const again = await runCli(["rollout", "--resume", out], { env, timeoutMs: 120_000 });
    expect(again.exitCode, again.stderr).toBe(1); // net-1 still cannot run
    const after = await readRun(out);
    expect(after.metrics).toHaveLength(4);
    expect(after.groups).toHaveLength(2);
    expect(after.summary?.tasks.find((t) => t.taskId === "net-1")?.error?.code).toBe("E_NETWORK_REQUIRED");

    // a changed dataset file is refused, not silently re-read
    await writeFile(
      dataset,
      `${await readFile(dataset, "utf8")}${row("late", { repo_url: "./repos/calc" })}\n`,
    );
    const changed = await runCli(["rollout", "--resume", out], { env, timeoutMs: 60_000 });
    expect(changed.exitCode).not.toBe(0);
    expect(changed.stderr).toMatch(/rows\.jsonl changed since the run started/);
    expect(changed.stderr).toMatch(/restore the original file/);
  });

  it("gold on a dataset row is a per-task error; no policy at all is a usage error", async () => {
    const file = join(tmp.path, "one.jsonl");
    await writeFile(file, `${row("calc-gold", { repo_url: "./repos/calc", base_commit: commit })}\n`);
    // three independent processes, at once
    const [gold, none, noTerm] = await Promise.all([
      runCli(
        [
          "rollout",
          "--dataset",
          file,
          "--policy",
          "gold",
          "--build-cmd",
          BUILD_CMD,
          "--out",
          join(tmp.path, "gold"),
        ],
        { env, timeoutMs: 60_000 },
      ),
      runCli(["rollout", "--dataset", file, "--build-cmd", BUILD_CMD], { env, timeoutMs: 60_000 }),
      // every term weighed 0: rows would have nothing to be scored by (by default build and lint weigh 1)
      runCli(
        ["rollout", "--dataset", file, "--policy", "empty", "--weight-build", "0", "--weight-lint", "0"],
        {
          env,
          timeoutMs: 60_000,
        },
      ),
    ]);
    expect(gold.exitCode, gold.stderr).toBe(1);
    const run = await readRun(join(tmp.path, "gold"));
    expect(run.summary?.tasks[0]?.error).toMatchObject({
      code: "E_NO_REFERENCE",
      message: expect.stringMatching(/calc-gold.*one\.jsonl row 1.*no reference solution/),
    });
    expect(none.exitCode).toBe(2);
    expect(none.stderr).toMatch(/--dataset needs a policy/);
    expect(none.stderr).toMatch(/FLAKEGYM_POLICY/);
    expect(noTerm.exitCode).toBe(2);
    expect(noTerm.stderr).toMatch(
      /the reward must come from the build, lint or judge term, and none is configured/,
    );
  });
});
