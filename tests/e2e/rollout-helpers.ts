import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { REPO_ROOT } from "@flakegym/test-utils";

/** Shared helpers of the rollout e2e suites. */

/** The fastest offline catalog task (node, no install step). */
export const TASK = "semver-lite-caret-zero";
const TASK_DIR = join(REPO_ROOT, "packages/runner/catalog", TASK);

/** Reads every output of a run directory. */
export async function readRun(out: string) {
  const jsonl = async (f: string) =>
    (await readFile(join(out, f), "utf8").catch(() => ""))
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const results = new Map<string, Record<string, unknown>>();
  for (const id of await readdir(join(out, "trajectories")).catch(() => [] as string[])) {
    const text = await readFile(join(out, "trajectories", id, "result.json"), "utf8").catch(() => undefined);
    if (text) results.set(id, JSON.parse(text));
  }
  return {
    manifest: JSON.parse(await readFile(join(out, "run.json"), "utf8")) as Record<string, any>,
    summary: JSON.parse(await readFile(join(out, "summary.json"), "utf8").catch(() => "null")) as Record<string, any> | null,
    groups: await jsonl("groups.jsonl"),
    samples: await jsonl("samples.jsonl"),
    metrics: await jsonl("metrics.jsonl"),
    results,
  };
}

/** A scripted plan that fixes only the 0.x-minor case (3 of 4 hidden tests pass) and edits the hidden test file. */
export async function partialFixPlan(dir: string): Promise<string> {
  const original = await readFile(join(TASK_DIR, "repo/src/range.js"), "utf8");
  const partial = original.replace(
    "{ op: \"<\", version: parse(`${v.major + 1}.0.0`) },",
    "{ op: \"<\", version: parse(v.major > 0 ? `${v.major + 1}.0.0` : `0.${v.minor + 1}.0`) },",
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
            { name: "write_to_file", arguments: { path: "test/caret-zero.test.mjs", content: "// all good\n" } },
          ],
        },
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "fixed 0.x carets" } }] },
      ],
    }),
  );
  return file;
}

