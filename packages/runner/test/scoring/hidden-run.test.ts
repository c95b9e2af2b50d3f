import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlakegymError } from "../../src/errors.js";
import { hiddenReportOf, runHiddenTests } from "../../src/scoring/hidden-run.js";
import { endedBy, type HiddenTestVerdict, ScoringSetupError, scriptEnd } from "../../src/scoring/scorer.js";
import type { ParsedScoring, StepResult } from "../../src/scoring/script.js";
import { buildSnapshot, forkSnapshot } from "../../src/snapshots/build.js";
import type { Snapshot } from "../../src/snapshots/manifest.js";
import { snapshotSpecOfTask } from "../../src/snapshots/spec.js";
import { BUILTIN_CATALOG_DIR, type LoadedTask, loadTaskDir } from "../../src/tasks/catalog.js";
import { createLocalBackend } from "../../src/workers/local/local-backend.js";
import type { ExecResult } from "../../src/workers/types.js";
import { skipWithoutSandbox } from "../helpers/sandbox.js";

const step = (output: string, exitCode = 0, seconds = 2): StepResult => ({
  exitCode,
  output,
  outputBytes: Buffer.byteLength(output),
  seconds,
});
const parsedOf = (steps: Record<string, StepResult>, p: Partial<ParsedScoring> = {}): ParsedScoring => ({
  steps: new Map(Object.entries(steps)),
  done: true,
  unfinished: [],
  agentRan:
    Object.keys(steps).some((s) => s === "build" || s.startsWith("test.")) || (p.unfinished ?? []).length > 0,
  anomalies: [],
  sealed: true,
  channel: "sealed",
  ...p,
});
const exec = (e: Partial<ExecResult> = {}): ExecResult => ({
  exitCode: 0,
  stdout: "",
  stderr: "",
  timedOut: false,
  durationMs: 10,
  ...e,
});

// the whole table is in script-verdict.test.ts; these are scriptEnd's wiring and endedBy's throws
describe("scriptEnd (how the one scoring script ended)", () => {
  it("stopped at the diff or the install before any agent code ran: the step's output, told apart", () => {
    expect(
      scriptEnd(
        parsedOf({ apply: step("patch does not apply", 1) }, { stoppedAt: "apply" }),
        exec(),
        false,
        [],
      ),
    ).toEqual({
      kind: "apply_failed",
      output: "patch does not apply",
    });
    const install = scriptEnd(
      parsedOf({ install: step("corrupt patch", 1) }, { stoppedAt: "install" }),
      exec(),
      false,
      [],
    );
    expect(install).toEqual({ kind: "setup_failed", output: "corrupt patch" });
    expect(() => endedBy("w1", exec(), install as Exclude<typeof install, { kind: "apply_failed" }>)).toThrow(
      ScoringSetupError,
    );
  });

  it("an install stopped after the agent's build ran scores 0 with the reason, never a setup error", () => {
    const end = scriptEnd(
      parsedOf({ build: step(""), install: step("not a directory", 1) }, { stoppedAt: "install" }),
      exec(),
      false,
      [],
    );
    expect(end).toMatchObject({ kind: "ran", failClosed: expect.stringContaining("not a directory") });
    expect(endedBy("w1", exec(), end as Exclude<typeof end, { kind: "apply_failed" }>)).toEqual([
      expect.stringContaining("did not install after the agent's build"),
    ]);
  });

  it("ended before any of the agent's code ran, or killed from outside: the machinery lost it", () => {
    const early = parsedOf({ apply: step("") }, { done: false });
    expect(scriptEnd(early, exec({ exitCode: 137 }), false, [])).toEqual({
      kind: "infra",
      what: "ended before any of the agent's code ran",
    });
    const during = parsedOf({}, { done: false, unfinished: ["test.0.0"] });
    expect(scriptEnd(during, exec({ exitCode: 137, sandboxKilled: true }), false, [])).toEqual({
      kind: "infra",
      what: "was killed from outside its sandbox",
    });
    // aborted by us: not the agent's doing either
    expect(scriptEnd(during, exec({ exitCode: 137 }), true, []).kind).toBe("infra");
    expect(() => endedBy("w1", exec({ exitCode: 137 }), { kind: "infra", what: "x" })).toThrow(/worker w1 x/);
  });

  it("killed by the code under test, during or after its step: ran, naming the step", () => {
    const during = parsedOf({}, { done: false, unfinished: ["test.0.0"] });
    expect(scriptEnd(during, exec({ exitCode: 137 }), false, [])).toEqual({
      kind: "ran",
      killed: { step: "test.0.0", during: true },
    });
    const after = parsedOf({ "test.0.0": step("ok") }, { done: false });
    expect(scriptEnd(after, exec({ exitCode: 143 }), false, [])).toEqual({
      kind: "ran",
      killed: { step: "test.0.0", during: false },
    });
  });

  it("finished: ran; held up into the whole deadline after the agent's code ran: a 0 with the reason", () => {
    expect(scriptEnd(parsedOf({}), exec(), false, [])).toEqual({ kind: "ran" });
    const cut = parsedOf({}, { done: false, unfinished: ["test.0.0"] });
    expect(scriptEnd(cut, exec({ exitCode: 137, timedOut: true }), false, [])).toMatchObject({
      kind: "ran",
      failClosed: expect.stringContaining("deadline"),
    });
  });
});

describe("hiddenReportOf (per-test results from the scorer's verdicts)", () => {
  const v = (id: string, kind: HiddenTestVerdict["kind"], passed: boolean): HiddenTestVerdict => ({
    id,
    kind,
    passed,
    exitCode: passed ? 0 : 1,
    timedOut: false,
  });

  it("per-id commands: each test's own step, its tail and seconds", () => {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i}`).join("\n");
    const r = hiddenReportOf(
      parsedOf({ "test.0.0": step(lines, 1, 3), "test.0.1": step("all good\n", 0, 1) }),
      [v("a", "fail_to_pass", false), v("b", "pass_to_pass", true)],
      false,
      [],
    );
    expect(r.results).toEqual([
      {
        id: "a",
        kind: "fail_to_pass",
        passed: false,
        exitCode: 1,
        timedOut: false,
        durationMs: 3000,
        tail: lines.split("\n").slice(-15).join("\n"),
      },
      {
        id: "b",
        kind: "pass_to_pass",
        passed: true,
        exitCode: 0,
        timedOut: false,
        durationMs: 1000,
        tail: "all good",
      },
    ]);
    expect(r.solved).toBe(false);
  });

  it("a suite: every test reads the one run's step; a test without a step says so", () => {
    const r = hiddenReportOf(
      parsedOf({ "test.0.0": step("ok 1 - a\nok 2 - b", 0, 4) }),
      [v("a", "fail_to_pass", true), v("b", "pass_to_pass", true)],
      true,
      [],
    );
    expect(r.results.map((t) => [t.tail, t.durationMs])).toEqual([
      ["ok 1 - a\nok 2 - b", 4000],
      ["ok 1 - a\nok 2 - b", 4000],
    ]);
    expect(r.solved).toBe(true);
    const lost = hiddenReportOf(parsedOf({}), [v("a", "fail_to_pass", false)], true, []);
    expect(lost.results[0]!.tail).toMatch(/did not report/);
  });

  it("tampering or no tests at all: not solved, whatever the verdicts say", () => {
    const tampered = hiddenReportOf(parsedOf({}), [v("a", "fail_to_pass", true)], true, ["canary passed"]);
    expect(tampered).toMatchObject({ solved: false, tampering: ["canary passed"] });
    expect(hiddenReportOf(parsedOf({}), [], true, []).solved).toBe(false);
  });
});

// runHiddenTests for real: the scorer's script in an exec-only bubblewrap worker on a fork of the
// node catalog task's snapshot, with the task's solution replaced by hostile or broken ones.
const noSandbox = skipWithoutSandbox("runHiddenTests in a sandboxed fork");
let root: string;
let snapshot: Snapshot;

/** A copy of semver-lite-caret-zero whose solution.patch is `patch` (undefined: its own). */
async function taskWithSolution(name: string, patch: string | undefined): Promise<LoadedTask> {
  const dir = join(root, "tasks", name, "semver-lite-caret-zero");
  await cp(join(BUILTIN_CATALOG_DIR, "semver-lite-caret-zero"), dir, { recursive: true });
  if (patch !== undefined) await writeFile(join(dir, "solution.patch"), patch);
  return loadTaskDir(dir);
}

async function runIn(task: LoadedTask, name: string, withSolution = true) {
  const fork = await forkSnapshot(snapshot, {
    dest: join(root, "forks", name),
    quotaMb: task.spec.limits.diskMb,
  });
  const worker = await createLocalBackend({ stateDir: join(root, "workers") }).start({
    runId: "hidden-run-test",
    taskId: task.spec.id,
    trajectoryId: name,
    profile: task.spec.profile,
    workspace: fork.workspace,
    depsDir: fork.deps,
    gateway: {},
    limits: { ...task.spec.limits, wallClockMs: 120_000 },
    agent: false,
  });
  try {
    return await runHiddenTests(worker, task, { withSolution, timeoutMs: 60_000 });
  } finally {
    await worker.stop();
    await fork.release();
  }
}

describe.skipIf(noSandbox)("runHiddenTests in a sandboxed fork", () => {
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "flakegym-hidden-run-"));
    const task = await taskWithSolution("original", undefined);
    snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(root, "cache") });
  }, 180_000);
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it("a solution whose code rewrites the hidden test file while it runs: caught, not solved", async () => {
    const own = await readFile(join(BUILTIN_CATALOG_DIR, "semver-lite-caret-zero", "solution.patch"), "utf8");
    // in the code under test (a new file under test/ is never run: scoring/demote.ts names the files);
    // a copy renamed over it: where the code runs as another user (apart) the installed file is the
    // script's and cannot be written in place, but its directory is the code's
    const hijack = [
      'import { renameSync as hijackRename, writeFileSync as hijackWrite } from "node:fs";',
      'hijackWrite("test/caret-zero.test.mjs.new", "// replaced\\n");',
      'hijackRename("test/caret-zero.test.mjs.new", "test/caret-zero.test.mjs");',
    ];
    const index = (
      await readFile(join(BUILTIN_CATALOG_DIR, "semver-lite-caret-zero", "repo", "src", "index.js"), "utf8")
    )
      .replace(/\n$/, "")
      .split("\n");
    const added = `diff --git a/src/index.js b/src/index.js\n--- a/src/index.js\n+++ b/src/index.js\n@@ -1,${index.length} +1,${index.length + hijack.length} @@\n${index.map((l) => ` ${l}\n`).join("")}${hijack.map((l) => `+${l}\n`).join("")}`;
    const r = await runIn(await taskWithSolution("hijack", `${own}${added}`), "hijack");
    expect(r.solved).toBe(false);
    expect(r.tampering.join("\n")).toContain(
      "hidden test files changed while the tests ran: test/caret-zero.test.mjs",
    );
  }, 180_000);

  it("a task graded per id: one command per test, each read from its own step, before and after", async () => {
    const task = await taskWithSolution("ids", undefined);
    const specFile = join(task.dir, "task.json");
    const spec = JSON.parse(await readFile(specFile, "utf8"));
    spec.tests.run = {
      kind: "ids",
      command: "node --test --test-reporter=tap --test-name-pattern {test} test/caret-zero.test.mjs",
      passPattern: "# pass 1\n",
      failToPass: ["caret zero minor stays on the patch"],
      passToPass: ["caret on one and above is unchanged"],
    };
    await writeFile(specFile, JSON.stringify(spec));
    const ids = await loadTaskDir(task.dir);
    const [before, after] = await Promise.all([runIn(ids, "ids-before", false), runIn(ids, "ids-after")]);
    expect(before.results.map((r) => [r.id, r.kind, r.passed])).toEqual([
      ["caret zero minor stays on the patch", "fail_to_pass", false],
      ["caret on one and above is unchanged", "pass_to_pass", true],
    ]);
    // each test's tail is its own command's output
    expect(before.results[0]!.tail).toContain("# fail 1");
    expect(before.results[1]!.tail).toContain("# pass 1");
    expect(before.solved).toBe(false);
    expect(after).toMatchObject({ solved: true, tampering: [] });
    expect(after.results.every((r) => r.passed && r.exitCode === 0 && !r.timedOut)).toBe(true);
  }, 180_000);

  it("a solution that does not apply: an E_PATCH naming the task, its solution file and git's words", async () => {
    const broken =
      "diff --git a/src/range.js b/src/range.js\n--- a/src/range.js\n+++ b/src/range.js\n@@ -1,1 +1,1 @@\n-no such line\n+x\n";
    const task = await taskWithSolution("broken", broken);
    const err = await runIn(task, "broken").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FlakegymError);
    expect((err as FlakegymError).code).toBe("E_PATCH");
    expect((err as Error).message).toContain(`task ${task.spec.id} (${task.paths.solution}) did not apply`);
    expect((err as Error).message).toMatch(/patch failed|does not apply|corrupt/);
  }, 180_000);
});
