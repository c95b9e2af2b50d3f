/**
 * The cost of scoring with the decoy twin run (scoring/twin-run.ts: the task's test commands run a
 * second time, in a fresh sandbox, on hidden test files whose expected values changed) against
 * scoring once, side by side: `diff` scored alternately both ways in fresh sandboxed forks of one
 * snapshot. CPU seconds come from a cgroup of the bench's own (every sandboxed scorer is charged
 * there); wall time and the load average beside it. Shared by the eval-cmd-twin and ids-twin benches.
 */
import { readFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import {
  buildSnapshot,
  type HiddenTests,
  hiddenTestsOf,
  type LoadedTask,
  loadTaskDir,
  type Snapshot,
  snapshotSpecOfTask,
} from "../packages/runner/src/index.js";
import { scoreInFork } from "../tests/integration/scoring/score-in-fork.js";
import { alternating, type BenchContext, median, printTable } from "./lib.js";
import { openRunCgroup } from "./run-cgroup.js";

function arg(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
}

export interface TwinCostInput {
  /** The bench's name (its cgroup and result file). */
  readonly name: string;
  /** What the ratio is of, for the closing line (`eval_cmd scoring`, `per-id scoring`). */
  readonly what: string;
  readonly task: LoadedTask;
  readonly snapshot: Snapshot;
  readonly hidden: HiddenTests;
  /** A diff that scores 1 (the reference solution). */
  readonly diff: string;
  readonly reps: number;
}

/** Scores `diff` with and without the twin `reps` times each (alternating first), prints the ratio. */
export async function measureTwinCost(ctx: BenchContext, o: TwinCostInput): Promise<void> {
  const cg = await openRunCgroup(o.name);
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
      task: o.task,
      snapshot: o.snapshot,
      hidden: o.hidden,
      diff: o.diff,
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
      o.reps,
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
      task: o.task.spec.id,
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
    `\n${o.what} CPU per trajectory, with the decoy twin vs once: ${(oc / bc).toFixed(2)}× (load average ${load.toFixed(1)} while measuring)`,
  );
  ctx.writeResult(o.name, { reps: o.reps, rows, ratio: oc / bc, loadavg: load });
}

/**
 * The task in `taskDir` (its snapshot built under the bench's out dir) measured by
 * {@link measureTwinCost} with its reference solution, `--reps N` times (default 3).
 */
export async function measureTaskTwinCost(
  ctx: BenchContext,
  o: { name: string; what: string; taskDir: string; args: string[] },
): Promise<void> {
  const task = await loadTaskDir(o.taskDir);
  const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(ctx.outDir, "cache") });
  const hidden = await hiddenTestsOf(task, 120_000);
  const diff = await readFile(task.paths.solution, "utf8");
  const reps = Number(arg(o.args, "reps", "3"));
  await measureTwinCost(ctx, { name: o.name, what: o.what, task, snapshot, hidden, diff, reps });
}
