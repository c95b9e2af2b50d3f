import { readFileSync } from "node:fs";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  GroupLine,
  MetricsLine,
  RunManifest,
  RunSummary,
  SampleLine,
  Score,
  TrajectoryResult,
} from "@flakegym/runner";
import { REPO_ROOT } from "@flakegym/test-utils";
import { execa, type ResultPromise } from "execa";

/** Shared helpers of the rollout e2e suites. */

/** The fastest offline catalog task (node, no install step). */
export const TASK = "semver-lite-caret-zero";
const TASK_DIR = join(REPO_ROOT, "packages/runner/catalog", TASK);

/** Reads every output of a run directory, each parsed with the schema it is written with. */
export async function readRun(out: string) {
  const jsonl = async <T>(f: string, schema: { parse(x: unknown): T }): Promise<T[]> =>
    (await readFile(join(out, f), "utf8").catch(() => ""))
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => schema.parse(JSON.parse(l)));
  const results = new Map<string, TrajectoryResult>();
  for (const id of await readdir(join(out, "trajectories")).catch(() => [] as string[])) {
    const text = await readFile(join(out, "trajectories", id, "result.json"), "utf8").catch(() => undefined);
    if (text) results.set(id, TrajectoryResult.parse(JSON.parse(text)));
  }
  const summary = await readFile(join(out, "summary.json"), "utf8").catch(() => undefined);
  return {
    manifest: RunManifest.parse(JSON.parse(await readFile(join(out, "run.json"), "utf8"))),
    summary: summary === undefined ? null : RunSummary.parse(JSON.parse(summary)),
    groups: await jsonl("groups.jsonl", GroupLine),
    samples: await jsonl("samples.jsonl", SampleLine),
    metrics: await jsonl("metrics.jsonl", MetricsLine),
    results,
  };
}

/** A trajectory's score.json. */
export async function readScore(out: string, trajectoryId: string): Promise<Score> {
  return Score.parse(
    JSON.parse(await readFile(join(out, "trajectories", trajectoryId, "score.json"), "utf8")),
  );
}

/** A scripted plan that fixes only the 0.x-minor case (3 of 4 hidden tests pass) and edits the hidden test file. */
export async function partialFixPlan(dir: string): Promise<string> {
  const original = await readFile(join(TASK_DIR, "repo/src/range.js"), "utf8");
  // JavaScript source text of the task's file (template literals inside, not ours)
  const tick = "`";
  const partial = original.replace(
    `{ op: "<", version: parse(${tick}$\{v.major + 1}.0.0${tick}) },`,
    `{ op: "<", version: parse(v.major > 0 ? ${tick}$\{v.major + 1}.0.0${tick} : ${tick}0.$\{v.minor + 1}.0${tick}) },`,
  );
  if (partial === original) throw new Error("the partial fix no longer matches src/range.js of the task");
  const file = join(dir, "partial-fix.json");
  await writeFile(
    file,
    JSON.stringify({
      version: 1,
      description: "half a fix, plus an edit to the hidden test file (which scoring must drop)",
      turns: [
        { tool_calls: [{ name: "write_to_file", arguments: { path: "src/range.js", content: partial } }] },
        {
          tool_calls: [
            {
              name: "write_to_file",
              arguments: { path: "test/caret-zero.test.mjs", content: "// all good\n" },
            },
          ],
        },
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "fixed 0.x carets" } }] },
      ],
    }),
  );
  return file;
}

/** The README's quick start: exactly two commands in one shell block (main job; tests). */
export function quickStart(): string[] {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.split(/^## /m).find((s) => s.startsWith("Quick start"));
  if (!section) throw new Error("README.md has no '## Quick start' section");
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error("README.md's quick start has no ```sh block");
  return block
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
}

/** `flakegym serve` as a CLI child on loopback port 0 and the URL it printed (within 120 s). */
export async function startServeCli(
  args: readonly string[],
  o: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<{ server: ResultPromise; url: string }> {
  const server = execa(
    process.execPath,
    [join(REPO_ROOT, "packages/runner/bin/flakegym.js"), "serve", ...args],
    {
      cwd: o.cwd,
      reject: false,
      stdin: "ignore",
      timeout: o.timeoutMs ?? 600_000,
      forceKillAfterDelay: 10_000,
      ...(o.env ? { env: o.env } : {}),
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      server.kill("SIGKILL");
      reject(new Error("serve printed no URL within 120 s"));
    }, 120_000);
    let out = "";
    server.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    void server.then((r) => {
      clearTimeout(timer);
      reject(new Error(`serve exited ${r.exitCode}: ${r.stderr}`));
    });
  });
  return { server, url };
}
