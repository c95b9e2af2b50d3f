import { randomBytes } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { FlakegymError } from "../errors.js";
import type { LoadedTask } from "../tasks/catalog.js";
import { testCommands } from "../tasks/task-spec.js";
import { touchedPaths } from "../text/diff.js";
import type { Worker } from "../workers/types.js";
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

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(join(e.parentPath, e.name));
  }
  return out.sort();
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
            ...(run.logParser ? { logParser: run.logParser } : {}),
            failToPass: run.failToPass,
            passToPass: run.passToPass,
            canary: run.canary,
            ...(run.opaque ? { opaque: run.opaque } : {}),
            ...(run.decoyInert ? { decoyInert: run.decoyInert } : {}),
          },
        }
      : {}),
    protected: task.spec.protected,
    profile: task.spec.profile,
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
