import { availableParallelism } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { createReporter } from "../../progress/reporter.js";
import { newRunId } from "../../rollout/config.js";
import { readRunState, runPaths } from "../../rollout/run-dir.js";
import { runRollout } from "../../rollout/run-rollout.js";
import type { RunConfig } from "../../rollout/schema.js";
import type { RunSummary } from "../../rollout/summary.js";
import { renderVerdicts, verdictFor } from "../../rollout/validate.js";
import { createRolloutDeps } from "../../rollout/wire.js";
import { listCatalog } from "../../tasks/catalog.js";
import { defineCommand } from "../command.js";

export const validateCommand = defineCommand({
  path: ["validate"],
  summary: "check catalog tasks: the gold policy must score 1, empty 0, and no hidden test may be flaky",
  details:
    "Runs each task twice through the real pipeline (snapshot, Cline in a worker, scoring in a fresh\n" +
    "fork): once with the `gold` policy (the reference solution applied through Cline's tools) and once\n" +
    "with `empty` (no change). The hidden tests run --repeat times per scoring to catch flaky tests.\n" +
    "Tasks that need network are skipped with a message when the machine is offline. Exit 1 on any failure.",
  options: z.object({
    task: z.array(z.string().min(1)).optional().describe("catalog task id"),
    all: z.boolean().default(false).describe("validate every task in the catalog"),
    catalog: z.string().optional().describe("task catalog directory (default: the built-in catalog)"),
    repeat: z.number().int().min(1).max(20).default(3).describe("hidden-test runs per scoring"),
    concurrency: z.number().int().min(1).optional().describe("workers at once (default: the number of CPUs)"),
    out: z
      .string()
      .optional()
      .describe("run directory kept for inspection (default runs/validate-<timestamp>)"),
    backend: z
      .enum(["local", "podman", "nomad"])
      .default("local")
      .describe("where workers run (podman and nomad cannot run Cline agent workers yet)"),
    json: z.boolean().default(false).describe("print the verdicts as JSON"),
  }),
  examples: ["flakegym validate --all", "flakegym validate --task tinygauge-vertical --repeat 5"],
  async run(opts, ctx) {
    if (opts.all === Boolean(opts.task?.length)) {
      throw new UsageError(
        "give either --task <id> (repeatable) or --all",
        "see flakegym tasks list for the ids",
      );
    }
    const tasks = opts.all ? (await listCatalog(opts.catalog)).map((e) => e.id) : opts.task!;
    if (tasks.length === 0) throw new UsageError("the task catalog is empty: nothing to validate");
    const runId = `validate-${newRunId()}`;
    const out = opts.out ?? join(ctx.cwd, "runs", runId);
    const config: RunConfig = {
      tasks,
      ...(opts.catalog ? { catalog: opts.catalog } : {}),
      groupSize: 2,
      policies: ["gold", "empty"],
      concurrency: opts.concurrency ?? Math.max(1, availableParallelism()),
      maxInfraRetries: 1,
      seed: 0,
      partialCredit: "none",
      weights: { tests: 1, build: 0, lint: 0, judge: 0 },
      testRepeat: opts.repeat,
      segments: "last",
      backend: opts.backend,
      limits: { maxTurns: 200, timeoutMs: 20 * 60_000, testTimeoutMs: 10 * 60_000 },
    };
    ctx.stderr.write(`validate: ${tasks.length} task(s), gold and empty, tests × ${opts.repeat} → ${out}\n`);
    const deps = await createRolloutDeps(config, { runId, signal: ctx.signal, env: ctx.env });
    const reporter = createReporter(ctx.stderr);
    let summary: RunSummary;
    try {
      ({ summary } = await runRollout({
        out,
        resume: false,
        config,
        runId,
        deps,
        progress: reporter.sink,
        signal: ctx.signal,
      }));
    } finally {
      reporter.close();
      await deps.close();
    }
    const state = await readRunState(runPaths(out), { repair: false });
    const byId = (taskId: string, index: number) =>
      [...state.results.values()].find((r) => r.taskId === taskId && r.index === index);
    const verdicts = tasks.map((t) => verdictFor(t, summary, byId(t, 0), byId(t, 1)));
    if (opts.json) ctx.stdout.write(`${JSON.stringify({ out, verdicts }, null, 2)}\n`);
    else ctx.stdout.write(`${renderVerdicts(verdicts).join("\n")}\n${out}\n`);
    if (summary.interrupted) return 130;
    return verdicts.some((v) => v.verdict === "fail") ? 1 : 0;
  },
});
