/**
 * `npm run bench -- eval [--trials 3] [--concurrency 3] [--scenarios create-file,edit-file,…]`: the
 * smoke scenarios × 2 scripted policies (gold, empty) × N trials through `runEval` (real Cline core,
 * sandboxed workers, scoring in fresh forks), once with trials in parallel (--concurrency) and once
 * one at a time (concurrency 1), in the same process run, after a warm-up that builds the
 * snapshots. Goal: parallel ≤ 0.6× the one-at-a-time wall time on a 2-core machine.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runEval } from "../packages/runner/src/eval/run-eval.js";
import { loadScenario, SUITES, suiteScenarioDirs } from "../packages/runner/src/eval/scenario.js";
import { createReporter } from "../packages/runner/src/progress/reporter.js";
import { createRolloutDeps } from "../packages/runner/src/rollout/wire.js";
import type { RunConfig } from "../packages/runner/src/run-format/schema.js";
import { BUILTIN_CATALOG_DIR } from "../packages/runner/src/tasks/catalog.js";
import { type BenchContext, printTable } from "./lib.js";

function flag(args: string[], name: string, dflt: string): string {
  const i = args.indexOf(`--${name}`);
  return i !== -1 && args[i + 1] ? args[i + 1]! : dflt;
}

const config = (concurrency: number): RunConfig => ({
  tasks: ["(eval)"],
  groupSize: 1,
  policies: ["gold", "empty"],
  concurrency,
  maxInfraRetries: 1,
  seed: 0,
  partialCredit: "none",
  weights: { tests: 1, build: 0, lint: 0, judge: 0 },
  testRepeat: 1,
  segments: "last",
  backend: "local",
  limits: { maxTurns: 20, timeoutMs: 300_000, testTimeoutMs: 120_000 },
});

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const trials = Number(flag(args, "trials", "3"));
  const concurrency = Number(flag(args, "concurrency", "3"));
  const ids = flag(args, "scenarios", SUITES.smoke!.join(",")).split(",");
  const dirs = suiteScenarioDirs("smoke").filter((d) => ids.includes(d.split("/").pop()!));
  const scenarios = await Promise.all(dirs.map((d) => loadScenario(d)));
  const scratch = await mkdtemp(join(tmpdir(), "flakegym-bench-eval-"));
  const signal = new AbortController().signal;
  const one = async (name: string, c: number, n: number) => {
    const reporter = createReporter(process.stderr, { live: false });
    const t0 = performance.now();
    try {
      const r = await runEval({
        evalDir: join(scratch, name),
        evalId: `bench-${name}`,
        items: { scenarios, tasks: [], catalog: BUILTIN_CATALOG_DIR },
        config: config(c),
        trials: n,
        keepWorkspaces: "none",
        progress: reporter.sink,
        signal,
        linkLatest: false,
        makeDeps: (cfg) => createRolloutDeps(cfg, { runId: `bench-${name}`, signal, env: process.env }),
      });
      const ms = performance.now() - t0;
      const statuses = r.report.cells.map((x) => `${x.item}×${x.policy}:${x.stats.status}`);
      return { ms, trials: r.report.trials.length, statuses };
    } finally {
      reporter.close();
    }
  };
  try {
    console.log(
      `bench eval: ${scenarios.length} scenarios × 2 policies × ${trials} trials; parallel (concurrency ${concurrency}) vs one at a time`,
    );
    const warm = await one("warm-up", concurrency, 1);
    console.log(`warm-up (snapshots built): ${(warm.ms / 1000).toFixed(1)} s`);
    const parallel = await one("parallel", concurrency, trials);
    const sequential = await one("sequential", 1, trials);
    const ratio = parallel.ms / sequential.ms;
    printTable([
      {
        mode: `parallel (concurrency ${concurrency})`,
        trials: parallel.trials,
        wall_s: (parallel.ms / 1000).toFixed(1),
      },
      { mode: "one at a time", trials: sequential.trials, wall_s: (sequential.ms / 1000).toFixed(1) },
    ]);
    console.log(`\nratio parallel / one at a time: ${ratio.toFixed(2)}× (goal ≤ 0.60×)`);
    const same = JSON.stringify(parallel.statuses) === JSON.stringify(sequential.statuses);
    console.log(
      `statuses equal in both modes: ${same ? "yes" : `NO\n  ${parallel.statuses}\n  ${sequential.statuses}`}`,
    );
    ctx.writeResult("eval", {
      scenarios: scenarios.map((s) => s.id),
      trials,
      concurrency,
      parallelMs: parallel.ms,
      sequentialMs: sequential.ms,
      ratio,
      statuses: parallel.statuses,
      sameStatuses: same,
    });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
