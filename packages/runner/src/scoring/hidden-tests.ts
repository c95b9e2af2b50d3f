import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { FlakegymError } from "../errors.js";
import type { LoadedTask } from "../tasks/catalog.js";
import { type TestCommand, testCommands, testPassed } from "../tasks/task-spec.js";
import { touchedPaths } from "../text/diff.js";
import type { Worker } from "../workers/types.js";
import { parseTestResults } from "./results.js";
import type { HiddenTests } from "./scorer.js";

/** Characters of base64 per shell argument (well below Linux's 128 KiB per-argument limit). */
const CHUNK = 64 * 1024;

/**
 * Writes `content` to `path` (relative to the workspace) inside the worker using only `exec`, so it
 * works the same on every backend. Written to a temp name and renamed: never half-written.
 */
export async function writeFileInWorker(
  worker: Worker,
  path: string,
  content: string | Buffer,
  signal?: AbortSignal,
): Promise<void> {
  const b64 = Buffer.from(content).toString("base64");
  // a random temp name: a fixed one could be taken beforehand (a directory there stops the write)
  const tmp = `${path}.flakegym-${randomBytes(6).toString("hex")}`;
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  let r = await worker.exec(
    `mkdir -p "$(dirname ${q(path)})" && : > ${q(`${tmp}.b64`)}`,
    signal ? { signal } : {},
  );
  for (let i = 0; i < b64.length && r.exitCode === 0; i += CHUNK) {
    r = await worker.exec(
      `printf %s ${b64.slice(i, i + CHUNK)} >> ${q(`${tmp}.b64`)}`,
      signal ? { signal } : {},
    );
  }
  if (r.exitCode === 0) {
    r = await worker.exec(
      `base64 -d ${q(`${tmp}.b64`)} > ${q(tmp)} && rm -f ${q(`${tmp}.b64`)} && mv ${q(tmp)} ${q(path)}`,
      signal ? { signal } : {},
    );
  }
  if (r.exitCode !== 0) {
    throw new FlakegymError(
      "E_WORKER_WRITE",
      `cannot write ${path} in worker ${worker.id}: ${r.stderr.trim()}`,
    );
  }
}

/** Applies a unified diff in the worker's workspace with `git apply`; the error shows git's output. */
export async function applyPatchInWorker(
  worker: Worker,
  patch: string,
  what: string,
  signal?: AbortSignal,
): Promise<void> {
  if (patch.trim() === "") return;
  const file = `.flakegym-${what.replace(/[^a-z0-9-]/gi, "-")}.patch`;
  await writeFileInWorker(worker, file, patch, signal);
  const r = await worker.exec(
    `git apply --whitespace=nowarn ${file}; s=$?; rm -f ${file}; exit $s`,
    signal ? { signal } : {},
  );
  if (r.exitCode !== 0) {
    throw new FlakegymError(
      "E_PATCH",
      `applying ${what} in worker ${worker.id} failed: ${(r.stderr || r.stdout).trim()}`,
    );
  }
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  }
  return out.sort();
}

/** Adds the task's hidden test files to the worker's workspace (tests.patch, or a tests dir copied over). */
export async function installHiddenTests(
  worker: Worker,
  task: LoadedTask,
  signal?: AbortSignal,
): Promise<void> {
  if (task.paths.testsPatch) {
    await applyPatchInWorker(worker, await readFile(task.paths.testsPatch, "utf8"), "hidden tests", signal);
    return;
  }
  const dir = task.paths.testsDir!;
  for (const file of await filesUnder(dir)) {
    await writeFileInWorker(worker, relative(dir, file), await readFile(file), signal);
  }
}

/**
 * A catalog task's hidden tests as data for scoring: the tests patch (or the tests dir's files),
 * the paths they touch (the agent's edits there are dropped) and one command per test id.
 */
export async function hiddenTestsOf(task: LoadedTask, timeoutMs: number): Promise<HiddenTests> {
  const run = task.spec.tests.run;
  const common = {
    commands: testCommands(run),
    ...(run.kind === "suite"
      ? {
          suite: {
            command: run.command,
            results: run.results,
            failToPass: run.failToPass,
            passToPass: run.passToPass,
            canary: run.canary,
          },
        }
      : {}),
    protected: task.spec.protected,
    allowEdits: task.spec.allowEdits,
    timeoutMs,
  };
  if (task.paths.testsPatch) {
    const patch = await readFile(task.paths.testsPatch, "utf8");
    return { testFiles: touchedPaths(patch), install: { kind: "patch", patch }, ...common };
  }
  const dir = task.paths.testsDir!;
  const files = await Promise.all(
    (await filesUnder(dir)).map(async (f) => ({ path: relative(dir, f), content: await readFile(f) })),
  );
  return { testFiles: files.map((f) => f.path), install: { kind: "files", files }, ...common };
}

/** Applies the task's reference solution. */
export async function applySolution(worker: Worker, task: LoadedTask, signal?: AbortSignal): Promise<void> {
  await applyPatchInWorker(worker, await readFile(task.paths.solution, "utf8"), "reference solution", signal);
}

export interface TestResult {
  readonly id: string;
  readonly kind: TestCommand["kind"];
  readonly passed: boolean;
  readonly exitCode: number;
  readonly timedOut: boolean;
  readonly durationMs: number;
  /** The last lines of the combined output. */
  readonly tail: string;
}

export interface HiddenTestReport {
  readonly results: TestResult[];
  /** Every fail_to_pass, pass_to_pass and eval_cmd test passed. */
  readonly solved: boolean;
}

/** Runs the task's hidden tests in the worker, one command per test id. */
export async function runHiddenTests(
  worker: Worker,
  task: LoadedTask,
  opts: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<HiddenTestReport> {
  const results: TestResult[] = [];
  const run = task.spec.tests.run;
  if (run.kind === "suite") {
    // one run of the suite (without the canary scoring adds), judged by its per-test result lines
    const r = await worker.exec(run.command, {
      timeoutMs: opts.timeoutMs ?? 10 * 60_000,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    const output = `${r.stdout}\n${r.stderr}`;
    const reported = parseTestResults(run.results, output);
    const tail = output.trim().split("\n").slice(-15).join("\n");
    for (const [ids, kind] of [
      [run.failToPass, "fail_to_pass"],
      [run.passToPass, "pass_to_pass"],
    ] as const) {
      for (const id of ids) {
        results.push({
          id,
          kind,
          passed: !r.timedOut && reported.get(id) === "passed",
          exitCode: r.exitCode,
          timedOut: r.timedOut,
          durationMs: r.durationMs,
          tail,
        });
      }
    }
    return { results, solved: results.length > 0 && results.every((t) => t.passed) };
  }
  for (const cmd of testCommands(run)) {
    const r = await worker.exec(cmd.command, {
      timeoutMs: opts.timeoutMs ?? 10 * 60_000,
      ...(opts.signal ? { signal: opts.signal } : {}),
    });
    const output = `${r.stdout}\n${r.stderr}`;
    results.push({
      id: cmd.id,
      kind: cmd.kind,
      passed: !r.timedOut && testPassed(cmd, r.exitCode, output),
      exitCode: r.exitCode,
      timedOut: r.timedOut,
      durationMs: r.durationMs,
      tail: output.trim().split("\n").slice(-15).join("\n"),
    });
  }
  return { results, solved: results.length > 0 && results.every((t) => t.passed) };
}
