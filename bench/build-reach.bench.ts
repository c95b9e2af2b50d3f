/**
 * `npm run bench -- build-reach [--reps 3]`
 *
 * The cost of a row's build term that checks what the build read (scoring/build-reach.ts: the
 * default build's reach probe — `go list`, rustc's dep-info, the C compiler's dependency output, the
 * node check's file list — plus the in-file rules) against the build term alone, side by side: one
 * offline catalog task per profile, its reference solution scored as a dataset row alternately
 * both ways in fresh sandboxed forks of one snapshot. CPU seconds come from a cgroup of the
 * bench's own (every sandboxed scorer is charged there); wall time and the load average beside it.
 */
import { readFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import {
  buildSnapshot,
  loadTask,
  ROW_TERM_DEFAULTS,
  rowReachProfile,
  snapshotSpecOfTask,
} from "../packages/runner/src/index.js";
import { scoreInFork } from "../tests/integration/scoring/score-in-fork.js";
import { alternating, type BenchContext, benchFlags, median, printTable } from "./lib.js";
import { openRunCgroup } from "./run-cgroup.js";

/** One task per profile that has a default build. */
const TASKS = [
  "truncate-runes",
  "stats-empty-mean",
  "b64-two-byte-tail",
  "durations-compound",
  "tinyini-interpolation",
];

/** Scores one task's reference solution as a row `reps` times each way; CPU and wall per run. */
async function measureTask(ctx: BenchContext, id: string, reps: number, cpu: () => Promise<number>) {
  const task = await loadTask(id);
  const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(ctx.outDir, "cache") });
  const diff = await readFile(task.paths.solution, "utf8");
  const profile = task.spec.profile;
  const reach = rowReachProfile(profile, {});
  let n = 0;
  const one = async (checked: boolean) => {
    const c0 = await cpu();
    const t0 = performance.now();
    const s = await scoreInFork({
      dir: ctx.outDir,
      name: `${id}-${n++}`,
      task,
      snapshot,
      hidden: { testFiles: [], commands: [], timeoutMs: 120_000 },
      diff,
      weights: { tests: 0, build: 1, lint: 0, judge: 0 },
      buildCmd: ROW_TERM_DEFAULTS[profile].build!,
      ...(checked ? (reach ? { reach } : {}) : { reachBaseline: true }),
    });
    if (s.reward !== 1)
      throw new Error(`${id}: its solution scored ${s.reward} as a row (${JSON.stringify(s.terms)})`);
    return { cpu: (await cpu()) - c0, wall: (performance.now() - t0) / 1000 };
  };
  const { ours, base } = await alternating(
    reps,
    () => one(true),
    () => one(false),
  );
  return { id, profile, ours, base };
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const reps = benchFlags("build-reach", args).num("reps", 3);
  const cg = await openRunCgroup("build-reach");
  if ("reason" in cg) console.log(`CPU: not measured (${cg.reason}); wall time only`);
  const cpu = async () => ("reason" in cg ? Number.NaN : await cg.cpuSeconds());
  const results = [];
  try {
    for (const id of TASKS) results.push(await measureTask(ctx, id, reps, cpu));
  } finally {
    if (!("reason" in cg)) await cg.close();
  }
  const rows = results.map((r) => {
    const oc = median(r.ours.map((x) => x.cpu));
    const bc = median(r.base.map((x) => x.cpu));
    return {
      task: `${r.id} (${r.profile})`,
      "cpu s (checked)": oc,
      "cpu s (build alone)": bc,
      "cpu ratio": oc / bc,
      "wall s (checked)": median(r.ours.map((x) => x.wall)),
      "wall s (build alone)": median(r.base.map((x) => x.wall)),
    };
  });
  printTable(rows);
  const sum = (k: "cpu s (checked)" | "cpu s (build alone)") => rows.reduce((a, r) => a + r[k], 0);
  const ratio = sum("cpu s (checked)") / sum("cpu s (build alone)");
  const load = loadavg()[0]!;
  console.log(
    `\nrow build-term scoring CPU, checked for what the build read vs the build alone: ${ratio.toFixed(2)}× over ${rows.length} tasks (load average ${load.toFixed(1)} while measuring)`,
  );
  ctx.writeResult("build-reach", { reps, rows, ratio, loadavg: load });
}
