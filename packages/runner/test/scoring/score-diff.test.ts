import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hiddenTestsOf } from "../../src/scoring/hidden-tests.js";
import { canOwnForOthers, HIDDEN_OWNER_UID, prepareReadOnlyHidden } from "../../src/scoring/read-only.js";
import { type HiddenTests, type ScoreOptions, scoreDiff } from "../../src/scoring/scorer.js";
import { buildSnapshot, forkSnapshot } from "../../src/snapshots/build.js";
import type { Snapshot } from "../../src/snapshots/manifest.js";
import { snapshotSpecOfTask } from "../../src/snapshots/spec.js";
import { type LoadedTask, loadTask } from "../../src/tasks/catalog.js";
import { capabilitiesOf } from "../../src/workers/backend.js";
import { createLocalBackend } from "../../src/workers/local/local-backend.js";
import type { WorkerSpec } from "../../src/workers/types.js";
import { skipWithoutSandbox } from "../helpers/sandbox.js";

/** A temp directory removed by cleanup(). */
async function tempDir(prefix = "flakegym-test-") {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

// scoreDiff for real: a snapshot of the node catalog task, exec-only bubblewrap workers, the
// task's hidden tests, and an OpenAI-compatible judge on loopback.

let tmp: { path: string; cleanup(): Promise<void> };
let task: LoadedTask;
let snapshot: Snapshot;
let ops: HiddenTests;
let solution: string;
let judge: Server;
let judgeUrl: string;
const judgeAnswers: string[] = [];
const noSandbox = skipWithoutSandbox("scoreDiff in a fresh sandboxed fork");

beforeAll(async () => {
  if (noSandbox) return;
  tmp = await tempDir("flakegym-score-");
  task = await loadTask("semver-lite-caret-zero");
  snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
  solution = await readFile(task.paths.solution, "utf8");
  ops = await hiddenTestsOf(task, 60_000);
  judge = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const content = judgeAnswers.shift() ?? "no idea";
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ choices: [{ message: { role: "assistant", content } }] }));
    });
  });
  await new Promise<void>((r) => judge.listen(0, "127.0.0.1", r));
  judgeUrl = `http://127.0.0.1:${(judge.address() as AddressInfo).port}/v1`;
}, 120_000);

afterAll(async () => {
  judge?.close();
  await tmp?.cleanup();
});

let n = 0;
async function score(
  diff: string,
  over: Partial<ScoreOptions> = {},
  readOnlyFiles?: WorkerSpec["readOnlyFiles"],
) {
  const fork = await forkSnapshot(snapshot, { dest: join(tmp.path, "forks", String(n++)) });
  const worker = await createLocalBackend({ stateDir: join(tmp.path, "workers") }).start({
    runId: "t",
    taskId: task.spec.id,
    trajectoryId: `score-${n}`,
    profile: task.spec.profile,
    workspace: fork.workspace,
    depsDir: fork.deps,
    gateway: {},
    limits: { memoryMb: 1024, pids: 256, cpuSeconds: 300, diskMb: 512, wallClockMs: 120_000 },
    agent: false,
    ...(readOnlyFiles ? { readOnlyFiles } : {}),
  });
  try {
    return await scoreDiff(
      worker,
      diff,
      ops,
      {
        partialCredit: "none",
        weights: { tests: 1, build: 0, lint: 0, judge: 0 },
        repeat: 1,
        termTimeoutMs: 60_000,
        taskPrompt: task.spec.prompt,
        ...over,
      },
      AbortSignal.timeout(120_000),
    );
  } finally {
    await worker.stop();
    await fork.release();
  }
}

describe.skipIf(noSandbox)("scoreDiff in a fresh sandboxed fork", () => {
  it("the reference solution scores 1; no change scores 0", async () => {
    const gold = await score(solution);
    expect(gold).toMatchObject({ reward: 1, tests: { resolved: true }, touchedTestFiles: [], flaky: [] });
    // the scoring shells were out of the code's reach: another user's (a root runner), else sealed
    expect(gold.channel).toBe(process.getuid?.() === 0 ? "apart" : "sealed");
    const empty = await score("");
    expect(empty.reward).toBe(0);
    expect(empty.testResults!.passToPass).toEqual({ "caret on one and above is unchanged": "passed" });
  }, 60_000);

  it("a diff too long for one command line is staged first on a backend whose execs share a workspace", async () => {
    const lines = Array.from({ length: 2_000 }, (_, i) => `+${String(i).padStart(79, "x")}`);
    const big = `diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,${lines.length} @@\n${lines.join("\n")}\n`;
    const s = await score(`${solution}${big}`);
    expect(s.diffBytes).toBeGreaterThan(160_000);
    expect(s).toMatchObject({ reward: 1, tests: { resolved: true } });
  }, 60_000);

  it("drops and records edits to the hidden test files, so an agent cannot grade itself", async () => {
    const cheat = [
      "diff --git a/test/caret-zero.test.mjs b/test/caret-zero.test.mjs",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/test/caret-zero.test.mjs",
      "@@ -0,0 +1 @@",
      '+import { test } from "node:test"; test("caret zero major stays within the minor", () => {});',
      "",
    ].join("\n");
    const s = await score(cheat);
    expect(s.touchedTestFiles).toEqual(["test/caret-zero.test.mjs"]);
    expect(s.diffBytes).toBe(0);
    expect(s.reward).toBe(0);
  }, 60_000);

  it("a diff that does not apply scores 0 with git's reason", async () => {
    const broken = solution.replace("function caret(v) {", "function caret(w) {");
    const s = await score(broken);
    expect(s.reward).toBe(0);
    expect(s.gate).toMatchObject({
      reason: "diff_apply_failed",
      detail: expect.stringMatching(/src\/range\.js/),
    });
    expect(s.terms).toEqual([
      { name: "tests", weight: 1, value: 0, detail: "not run: the diff did not apply" },
    ]);
  }, 60_000);

  it("mixes build, lint and judge terms by weight; a judge answer without a score is recorded, not thrown", async () => {
    // one answer per reading: the diff as written and its code reading
    judgeAnswers.push('Looks right. {"score": 0.5, "reason": "ok"}', '{"score": 0.5}');
    const mixed = await score(solution, {
      weights: { tests: 0.5, build: 0.2, lint: 0.1, judge: 0.2 },
      buildCmd: "node --check src/range.js",
      lintCmd: "grep -q TODO src/range.js",
      judge: { baseUrl: judgeUrl, model: "judge", timeoutMs: 10_000 },
    });
    expect(mixed.terms.map((t) => [t.name, t.value])).toEqual([
      ["tests", 1],
      ["build", 1],
      ["lint", 0],
      ["judge", 0.5],
    ]);
    expect(mixed.reward).toBeCloseTo((0.5 * 1 + 0.2 * 1 + 0.1 * 0 + 0.2 * 0.5) / 1.0);
    expect(mixed.judge).toMatchObject({ via: "json", code: { via: "json" }, calls: 2 });

    judgeAnswers.push("I refuse to grade this.", "I refuse to grade this.");
    const noScore = await score(solution, {
      weights: { tests: 0.8, build: 0, lint: 0, judge: 0.2 },
      judge: { baseUrl: judgeUrl, model: "judge", timeoutMs: 10_000 },
    });
    const j = noScore.terms.find((t) => t.name === "judge")!;
    expect(j.value).toBeNull();
    expect(j.error).toMatch(/no score found/);
    expect(noScore.reward).toBe(1); // the failed term is left out, not counted as 0
  }, 90_000);

  it("a harness edit beside the fix is reverted and recorded; --tamper-penalty zero makes it 0", async () => {
    const harness = [
      "diff --git a/.npmrc b/.npmrc",
      "new file mode 100644",
      "--- /dev/null",
      "+++ b/.npmrc",
      "@@ -0,0 +1 @@",
      "+node-options=--require ./hook.cjs",
      "",
    ].join("\n");
    const reverted = await score(`${solution}${harness}`);
    expect(reverted).toMatchObject({ reward: 1, tampered: [".npmrc"], tests: { resolved: true } });
    expect(reverted.gate).toBeUndefined();
    const zero = await score(`${solution}${harness}`, { tamperPenalty: "zero" });
    expect(zero).toMatchObject({ reward: 0, tampered: [".npmrc"], gate: { reason: "tampered" } });
  }, 90_000);

  it("code that turns the assertions into no-ops passes every test and the canary: reward 0, tampering named", async () => {
    const hook = [
      "diff --git a/src/index.js b/src/index.js",
      "--- a/src/index.js",
      "+++ b/src/index.js",
      "@@ -1,2 +1,5 @@",
      '+import { createRequire } from "node:module";',
      '+const a = createRequire(import.meta.url)("node:assert/strict");',
      "+a.equal = () => {};",
      ' export { parseRange, satisfies } from "./range.js";',
      ' export { compare, format, parse } from "./version.js";',
      "",
    ].join("\n");
    const s = await score(hook);
    expect(s.reward).toBe(0);
    expect(s.gate).toMatchObject({
      reason: "tests_tampered",
      detail: expect.stringMatching(/canary .* passed/),
    });
  }, 60_000);

  // code under test that, at import, makes a hidden test file writable again and turns its
  // assertions (the canary's too) into no-ops
  const rewriteAtImport = [
    "diff --git a/src/index.js b/src/index.js",
    "--- a/src/index.js",
    "+++ b/src/index.js",
    "@@ -1,2 +1,9 @@",
    '+import { readFileSync, renameSync, writeFileSync } from "node:fs";',
    '+const f = new URL("../test/caret-zero.test.mjs", import.meta.url);',
    '+const n = new URL("../test/caret-zero.test.mjs.new", import.meta.url);',
    "+try {",
    '+  writeFileSync(n, readFileSync(f, "utf8").replaceAll("assert.equal(", "void ("));',
    "+  renameSync(n, f);",
    "+} catch {}",
    ' export { parseRange, satisfies } from "./range.js";',
    ' export { compare, format, parse } from "./version.js";',
    "",
  ].join("\n");

  it("without read-only binds, a hidden test file rewritten at import is caught by the checksum: reward 0, file named", async () => {
    const s = await score(rewriteAtImport);
    expect(s.reward).toBe(0);
    expect(s.gate).toMatchObject({
      reason: "tests_tampered",
      detail: expect.stringContaining("test/caret-zero.test.mjs"),
    });
    expect(s.tampered).toContain("test/caret-zero.test.mjs");
  }, 60_000);

  it.skipIf(!canOwnForOthers())(
    "hidden test files bound read-only, owned by nobody (needs root on the host): gold scores 1; a rewrite at import fails, so the unfixed code scores a plain 0 and the file never changed",
    async () => {
      for (const [diff, reward] of [
        [solution, 1],
        [rewriteAtImport, 0],
      ] as const) {
        const p = (await prepareReadOnlyHidden(capabilitiesOf("local"), ops, snapshot.workspace))!;
        try {
          const [file] = p.readOnly!.files;
          expect(p.readOnly!.files.map((f) => f.path)).toEqual(["test/caret-zero.test.mjs"]);
          expect(await stat(file!.hostPath)).toMatchObject({ uid: HIDDEN_OWNER_UID, mode: 0o100444 });
          const s = await score(diff, { bound: p.bound }, p.readOnly!.files);
          expect(s.reward).toBe(reward);
          // the unfixed code answers the wrong boolean, which its negated decoys expect: they are
          // complements of their twins (an honest wrong answer passes them), so a plain 0, no flag
          expect(s.gate?.reason, s.gate?.detail).toBeUndefined();
          expect(s.tampered).toEqual([]);
          // the canary ran from the bound file: it was reported (failed) and judged
          expect(await readFile(file!.hostPath)).toEqual(p.bound.files[0]!.content);
          expect(p.bound.files[0]!.content.toString()).toContain(p.bound.canary!.id);
        } finally {
          await p.readOnly!.release();
        }
      }
    },
    120_000,
  );

  it("repeated runs flag a test whose result changes", async () => {
    // a test that alternates pass/fail across runs through a counter file in the workspace (the
    // repeats run in one script, so the counter carries over between them)
    const { suite: _suite, ...perId } = ops; // per-id commands instead of the task's suite
    const flakyOps: HiddenTests = {
      ...perId,
      commands: [
        {
          id: "coin",
          kind: "fail_to_pass",
          command: "n=$(cat .runs 2>/dev/null || echo 0); echo $((n+1)) > .runs; test $((n % 2)) -eq 0",
        },
      ],
    };
    const saved = ops;
    ops = flakyOps;
    try {
      const s = await score(solution, { repeat: 3 });
      expect(s.flaky).toEqual(["coin"]);
      expect(s.testResults!.failToPass).toEqual({ coin: "failed" });
      expect(s.reward).toBe(0);
    } finally {
      ops = saved;
    }
  }, 60_000);

  it("a task without hidden tests (a dataset row) has no tests term: build and lint alone make the reward", async () => {
    const saved = ops;
    // no hidden tests: the agent's test files are kept (build files are still the snapshot's)
    ops = { testFiles: [], commands: [], timeoutMs: saved.timeoutMs };
    try {
      const s = await score(solution, {
        weights: { tests: 1, build: 1, lint: 0.5, judge: 0 },
        buildCmd: "node --check src/range.js",
        lintCmd: "grep -q TODO src/range.js",
      });
      expect(s.terms.map((t) => [t.name, t.value])).toEqual([
        ["build", 1],
        ["lint", 0],
      ]);
      expect(s.tests).toBeUndefined();
      expect(s.testResults).toBeUndefined();
      expect(s.reward).toBeCloseTo(1 / 1.5);
      // the hidden test files were never added to the workspace
      const broken = await score("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n", {
        weights: { tests: 1, build: 1, lint: 0, judge: 0 },
        buildCmd: "true",
      });
      expect(broken).toMatchObject({ reward: 0, terms: [], gate: { reason: "diff_apply_failed" } });
    } finally {
      ops = saved;
    }
  }, 60_000);
});
