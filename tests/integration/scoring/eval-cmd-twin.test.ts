import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { buildSnapshot, hiddenTestsOf, loadTaskDir, snapshotSpecOfTask } from "@flakegym/runner";
import { makeTempDir, runCli, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { scoreInFork } from "./score-in-fork.js";

/**
 * The decoy twin of eval_cmd tasks against real tasks: Harbor fixtures that import, and catalog
 * tasks exported as Harbor directories and imported back. With the twin run beside it, the
 * reference solution still scores 1 (its twin failed) and the empty change 0; a task whose hidden
 * files have no assertion to change is scored once and reported unguarded. By default a fast form
 * (three tasks: the unguarded fixture, the uv cookbook fixture, one exported catalog task; the
 * hello-greeting fixture is scored by harbor-attacks.test.ts); `FLAKEGYM_TWIN_CATALOG=all`
 * (`npm run test:eval-cmd-twin`) scores every importable fixture and every offline catalog task.
 */

const FIXTURES = join(import.meta.dirname, "../../fixtures/harbor");
const OFFLINE_CATALOG = join(import.meta.dirname, "../../../packages/runner/catalog");
/** Tasks with no assertion a decoy can change: scored once, reported unguarded. */
const UNGUARDED = new Set(["empty-workspace"]);

let tmp: TempDir;
let catalog: string;
let ids: string[];

const ALL = process.env.FLAKEGYM_TWIN_CATALOG === "all";
/** The fast form's tasks. */
const FAST = ["empty-workspace", "uv-cookbook", "tinyini-interpolation"];

async function exportedIds(): Promise<string[]> {
  if (!ALL) {
    console.log(
      `fast form: ${FAST.join(", ")} (FLAKEGYM_TWIN_CATALOG=all scores every fixture and offline catalog task)`,
    );
    return ["tinyini-interpolation"];
  }
  const out: string[] = [];
  for (const e of await readdir(OFFLINE_CATALOG, { withFileTypes: true })) {
    if (!e.isDirectory()) continue;
    const spec = JSON.parse(
      await readFile(join(OFFLINE_CATALOG, e.name, "task.json"), "utf8").catch(() => "{}"),
    );
    if (spec.network === "none" && spec.source?.kind === "local") out.push(e.name);
  }
  return out.sort();
}

beforeAll(async () => {
  tmp = await makeTempDir("flakegym-eval-cmd-twin-");
  catalog = join(tmp.path, "catalog");
  const exported = join(tmp.path, "exported");
  const exp = await runCli([
    "tasks",
    "export",
    "--harbor",
    exported,
    ...(await exportedIds()).flatMap((t) => ["--task", t]),
  ]);
  expect(exp.exitCode, exp.stderr).toBe(0);
  for (const ds of [FIXTURES, exported]) {
    const imp = await runCli(["tasks", "import", "--dataset", ds, "--out", catalog]);
    expect(imp.exitCode, imp.stderr).toBe(0);
  }
  ids = (await readdir(catalog, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .filter((id) => ALL || FAST.includes(id))
    .sort();
  console.log(`eval_cmd tasks: ${ids.join(", ")}`);
}, 600_000);
afterAll(async () => {
  await tmp?.cleanup();
});

describe("eval_cmd decoy twin on real tasks", () => {
  it("gold scores 1 beside a failing twin and empty 0 on every imported task", async () => {
    expect(ids.length).toBeGreaterThanOrEqual(ALL ? 6 : FAST.length);
    for (const id of ids) {
      const task = await loadTaskDir(join(catalog, id));
      expect(task.spec.tests.run.kind).toBe("eval_cmd");
      const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(tmp.path, "cache") });
      const hidden = await hiddenTestsOf(task, 300_000);
      const score = (name: string, diff: string) =>
        scoreInFork({ dir: tmp.path, name, task, snapshot, hidden, diff });
      const gold = await score(`${id}-gold`, await readFile(task.paths.solution, "utf8"));
      console.log(
        `${id}: gold ${gold.reward} twin ${JSON.stringify(gold.twin)} ${JSON.stringify(gold.decoys)}`,
      );
      expect(gold.reward, `${id}: ${JSON.stringify(gold.gate ?? gold.terms)}`).toBe(1);
      if (UNGUARDED.has(id)) {
        expect(gold.twin).toBeUndefined();
        expect(gold.decoys?.unguarded.map((u) => u.id)).toEqual(["eval_cmd"]);
      } else {
        expect(gold.twin?.passed).toBe(false);
        expect(gold.decoys?.guarded).toEqual(["eval_cmd"]);
      }
      const empty = await score(`${id}-empty`, "");
      expect(empty.reward, id).toBe(0);
    }
  }, 1_800_000);
});
