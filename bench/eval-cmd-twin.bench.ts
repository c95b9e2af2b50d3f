/**
 * `npm run bench -- eval-cmd-twin [--reps 3]`
 *
 * The cost of scoring an eval_cmd task with its decoy twin (scoring/twin-run.ts: the eval command
 * run a second time, in a fresh sandbox, on hidden test files whose expected values changed)
 * against scoring it once, side by side: the Harbor fixture hello-greeting, imported, its
 * reference solution scored alternately both ways in fresh sandboxed forks of one snapshot. CPU
 * seconds come from a cgroup of the bench's own (every sandboxed scorer is charged there); wall
 * time and the load average beside it. Expected: 3–4× (the eval command runs once, and TWIN_REPEAT
 * = 3 times in the twin's sandbox).
 */
import { readFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import {
  buildSnapshot,
  hiddenTestsOf,
  loadTaskDir,
  snapshotSpecOfTask,
} from "../packages/runner/src/index.js";
import { scoreInFork } from "../tests/integration/scoring/score-in-fork.js";
import { alternating, type BenchContext, median, printTable } from "./lib.js";
import { openRunCgroup } from "./run-cgroup.js";

function arg(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const reps = Number(arg(args, "reps", "3"));
  const catalog = join(ctx.outDir, "catalog");
  const fixtures = join(import.meta.dirname, "../tests/fixtures/harbor/hello-greeting");
  const imp = await execa(
    process.execPath,
    [
      join(import.meta.dirname, "../packages/runner/bin/flakegym.js"),
      "tasks",
      "import",
      "--dataset",
      fixtures,
      "--out",
      catalog,
      "--replace",
    ],
    { reject: false },
  );
  if (imp.exitCode !== 0) throw new Error(`tasks import of ${fixtures} failed: ${imp.stderr}`);
  const task = await loadTaskDir(join(catalog, "hello-greeting"));
  const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(ctx.outDir, "cache") });
  const hidden = await hiddenTestsOf(task, 120_000);
  const gold = await readFile(task.paths.solution, "utf8");
  const cg = await openRunCgroup("eval-cmd-twin");
  if ("reason" in cg) console.log(`CPU: not measured (${cg.reason}); wall time only`);
  const cpu = async () => ("reason" in cg ? Number.NaN : await cg.cpuSeconds());
  let n = 0;
  const one = async (twin: boolean) => {
    const c0 = await cpu();
    const t0 = performance.now();
    // the integration tests' scorer: a fresh fork and sandboxed worker per run, as rollout does
    const s = await scoreInFork({
      dir: ctx.outDir,
      name: `r${n++}`,
      task,
      snapshot,
      hidden,
      diff: gold,
      twin,
    });
    if (s.reward !== 1) throw new Error(`gold scored ${s.reward} (${s.gate?.detail ?? ""})`);
    if (twin !== (s.twin !== undefined)) throw new Error(`the run ${twin ? "had no" : "had a"} decoy twin`);
    return { cpu: (await cpu()) - c0, wall: (performance.now() - t0) / 1000 };
  };
  let ours: { cpu: number; wall: number }[];
  let base: { cpu: number; wall: number }[];
  try {
    ({ ours, base } = await alternating(
      reps,
      () => one(true),
      () => one(false),
    ));
  } finally {
    if (!("reason" in cg)) await cg.close();
  }
  const oc = median(ours.map((x) => x.cpu));
  const bc = median(base.map((x) => x.cpu));
  const rows = [
    {
      task: task.spec.id,
      "cpu s (with twin)": oc,
      "cpu s (once)": bc,
      "cpu ratio": oc / bc,
      "wall s (with twin)": median(ours.map((x) => x.wall)),
      "wall s (once)": median(base.map((x) => x.wall)),
    },
  ];
  printTable(rows);
  const load = loadavg()[0]!;
  console.log(
    `\neval_cmd scoring CPU per trajectory, with the decoy twin vs once: ${(oc / bc).toFixed(2)}× (load average ${load.toFixed(1)} while measuring)`,
  );
  ctx.writeResult("eval-cmd-twin", { reps, rows, ratio: oc / bc, loadavg: load });
}
