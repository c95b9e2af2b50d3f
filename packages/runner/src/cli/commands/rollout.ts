import { stat } from "node:fs/promises";
import { join, resolve } from "node:path";
import { match } from "ts-pattern";
import { FlakegymError, UsageError } from "../../errors.js";
import { formatSweepResult, sweepLeftovers } from "../../gc/sweep.js";
import { isNixApp, nixAppFallbackMessage, pinningFlag } from "../../images/nix-app.js";
import { storeOutputsOf } from "../../nix/store-outputs.js";
import { probePolicyEndpoints } from "../../policy/probe.js";
import { validatePolicySpecs } from "../../policy/spec.js";
import type { ProgressSink } from "../../progress/events.js";
import { createReporter } from "../../progress/reporter.js";
import { runSecrets } from "../../redact/redactor.js";
import { newRunId, resolveRolloutOptions, resumeAtropos, resumeConfig } from "../../rollout/config.js";
import {
  type DatasetSelection,
  datasetSummaryOf,
  reselectDataset,
  selectDataset,
} from "../../rollout/dataset-tasks.js";
import { rolloutExitCode } from "../../rollout/exit-code.js";
import { RolloutOptions } from "../../rollout/options.js";
import { checkNewRunDir, checkOutDir } from "../../rollout/out-path.js";
import { checkResumeInputs, hashInputs, runInputFiles } from "../../rollout/run-inputs.js";
import { acquireRunLock } from "../../rollout/run-lock.js";
import { runRollout } from "../../rollout/run-rollout.js";
import type { RunSummary } from "../../rollout/summary.js";
import { createRolloutDeps } from "../../rollout/wire.js";
import { readManifest, runPaths } from "../../run-format/run-dir.js";
import type { RunConfig } from "../../run-format/schema.js";
import { pythonOptionsOfFlags } from "../../snapshots/python-options.js";
import { BUILTIN_CATALOG_DIR, loadTask } from "../../tasks/catalog.js";
import { datasetPathError, formatRowError } from "../../tasks/dataset.js";
import { datasetAsCatalog } from "../../tasks/dataset-catalog.js";
import { withDatasetPath } from "../../tasks/hf-dataset.js";
import { printable } from "../../text/looks-binary.js";
import { poolEvent, resolvePool } from "../../workers/pool/decisions.js";
import { type CliContext, defineCommand } from "../command.js";
import { catalogTaskProfiles, nixAppDefault, preflightWorkerImages } from "./rollout-images.js";
import { preflightStoreWorkers } from "./rollout-store.js";

export const rolloutCommand = defineCommand({
  path: ["rollout"],
  summary: "run groups of Cline trajectories per task, score them with hidden tests, write trainer data",
  details:
    "For each --task: build (or reuse) the task's snapshot, run --group-size Cline sessions in isolated\n" +
    "workers driven by --policy through the policy gateway, score each in a fresh fork by running the\n" +
    "hidden tests, and write groups.jsonl (Atropos ScoredDataGroup), samples.jsonl, metrics.jsonl,\n" +
    "summary.json and trajectories/<id>/ under --out. --atropos pushes groups to a trainer's run-api.\n" +
    "Ctrl-C stops cleanly; --resume <dir> finishes what is missing.\n" +
    "--dataset <file> [--limit N] rolls out rows of a dataset file (swe-agent-13k schema) instead: rejected\n" +
    "rows are listed and skipped; rows have no hidden tests, so the reward comes from --build-cmd,\n" +
    "--lint-cmd and/or --judge, and --policy (or FLAKEGYM_POLICY) is required. A SWE-bench-style file\n" +
    "or a directory of Harbor task dirs is imported as a catalog beside the run (<out>.tasks) and\n" +
    "rolled out like catalog tasks: reward = hidden tests, and the gold policy works.",
  options: RolloutOptions,
  examples: [
    "flakegym rollout --task semver-lite-caret-zero",
    "flakegym rollout --task tinygauge-vertical --group-size 8 --policy openai:http://127.0.0.1:8000/v1#qwen3-8b --tokenizer ./qwen3",
    "flakegym rollout --task a --policy gold --policy empty --group-size 2",
    "flakegym rollout --dataset rows.jsonl --limit 100 --policy openai:http://127.0.0.1:8000/v1#qwen3-8b --build-cmd 'npm test'",
    "flakegym rollout --resume runs/20261121T093000Z-1a2b3c",
  ],
  async run(given0, ctx) {
    const given = given0.resume === undefined ? await withDatasetPath(given0, ctx) : given0;
    const runId = newRunId();
    // where the run writes is checked, and held, before anything starts (no banner, no gc)
    const resuming = given.resume !== undefined;
    // a --dataset that is not there is a usage error before anything is written (runs/ included)
    if (given.dataset !== undefined && !resuming) {
      const path = resolve(ctx.cwd, given.dataset);
      await stat(path).catch((cause: Error) => {
        throw datasetPathError(path, cause);
      });
    }
    const out = await checkOutDir(
      resuming ? "--resume" : "--out",
      given.resume ?? given.out ?? join("runs", runId),
      ctx.cwd,
    );
    if (given.dataset !== undefined && !resuming) await checkOutDir("--out", `${out}.tasks`, ctx.cwd);
    const lock = await acquireRunLock(out, "rollout");
    try {
      if (!resuming) await checkNewRunDir(out);
      return await runHoldingLock(resuming ? { ...given, resume: out } : { ...given, out }, ctx, runId);
    } finally {
      await lock.release();
    }
  },
});

/** The dataset rows a run takes: `--dataset` now, or a resumed run's stored selection (progress on a TTY). */
async function datasetSelectionOf(
  dataset: { readonly file: string; readonly limit?: number | undefined } | undefined,
  stored: RunConfig | undefined,
  ctx: CliContext,
): Promise<DatasetSelection | undefined> {
  const datasetProgress = ctx.stderr.isTTY
    ? { onProgress: (n: number) => ctx.stderr.write(`\rread ${n} rows…`) }
    : {};
  let selection: DatasetSelection | undefined;
  if (dataset) {
    selection = await selectDataset(dataset.file, dataset.limit, { signal: ctx.signal, ...datasetProgress });
  } else if (stored?.dataset) {
    selection = await reselectDataset(stored.dataset, stored.tasks, {
      signal: ctx.signal,
      ...datasetProgress,
    });
  }
  if (selection && ctx.stderr.isTTY) ctx.stderr.write("\r");
  if (selection) reportRejected(selection, ctx.stderr);
  return selection;
}

/** The rollout, once its run directory is checked and this process holds it. */
async function runHoldingLock(given: RolloutOptions, ctx: CliContext, runId: string): Promise<number> {
  const opts = await nixAppOptions(await withImportedTasks(given, ctx, runId), ctx);
  const r = resolveRolloutOptions(opts, ctx.env, ctx.cwd, runId);
  const stored = r.resume ? await readManifest(runPaths(r.out)) : undefined;
  // resuming: the stored run's settings; --concurrency, --max-infra-retries and --atropos may differ
  let config = stored
    ? {
        ...resumeConfig(stored.config, opts),
        ...(opts.atropos ? { atropos: resumeAtropos(stored.config, opts.atropos, r.config.atropos) } : {}),
      }
    : r.config;
  const selection = await datasetSelectionOf(r.dataset, stored?.config, ctx);
  if (selection && r.dataset)
    config = { ...config, tasks: selection.tasks.map((t) => t.id), dataset: selection.config };
  // bad input is a usage error now, before any run directory, worker or retry
  await validatePolicySpecs(config.policies, ctx.signal);
  if (!selection) await checkCatalogTasks(config.tasks, config.catalog);
  // a model server that cannot be reached is said once, now, naming its URL
  await probePolicyEndpoints(config.policies, ctx.signal);
  // what the run depends on, by content: a resume refuses changed task files, plans or tokenizer
  const inputFiles = await runInputFiles(config, ctx.cwd);
  const inputs = await hashInputs(inputFiles);
  if (stored?.inputs) {
    const paths = new Map(inputFiles.map((i) => [i.key, i.path]));
    checkResumeInputs(r.out, stored.inputs, inputs, (key) => paths.get(key));
  }
  // --images nix: every task's image is here before anything runs
  const workerImages =
    config.images === "nix" ? await preflightWorkerImages(config, selection?.tasks, ctx) : undefined;
  if (typeof workerImages === "number") return workerImages;
  // `nix run .#rollout` on the local backend: the flake's toolchains (and snapshots) from the store
  const storeWorkers = await preflightStoreWorkers(config, () => taskProfilesOf(config, selection), ctx);
  if (r.banner) ctx.stderr.write(`\n  ${r.banner}\n\n`);
  ctx.stderr.write(`${rolloutHeadline(config, selection, r, stored?.runId ?? runId)}\n`);
  // what dead runs left (a killed earlier attempt of this run included); live runs are untouched
  const swept = await sweepLeftovers();
  for (const x of swept.results) ctx.stderr.write(`gc: ${formatSweepResult(x, false)}\n`);
  const pool = resolvePool({
    command: "rollout",
    trajectories: config.tasks.length * config.groupSize,
    concurrency: config.concurrency,
    ...(opts.pool !== undefined ? { size: opts.pool } : {}),
    ...(opts.poolIdle !== undefined ? { idleS: opts.poolIdle } : {}),
    ...(opts.reuse !== undefined ? { reuse: opts.reuse } : {}),
  });
  let sink: ProgressSink | undefined;
  const deps = await createRolloutDeps(config, {
    ...(pool ? { pool, onPool: (s) => sink?.(poolEvent(s)) } : {}),
    runId: stored?.runId ?? runId,
    signal: ctx.signal,
    ...(r.judgeApiKey ? { judgeApiKey: r.judgeApiKey } : {}),
    ...(r.gatewayAdvertise ? { gatewayAdvertise: r.gatewayAdvertise } : {}),
    onNote: (m) => ctx.stderr.write(`${m}\n`),
    env: ctx.env,
    python: pythonOptionsOfFlags(opts),
    ...(selection ? { datasetTasks: selection.tasks } : {}),
    ...(workerImages ? { workerImages } : {}),
    ...(storeWorkers ? { storeWorkers } : {}),
  });
  const reporter = createReporter(ctx.stderr);
  sink = reporter.sink;
  let result: Awaited<ReturnType<typeof runRollout>>;
  try {
    result = await runRollout({
      out: r.out,
      resume: r.resume,
      config,
      runId,
      deps,
      progress: reporter.sink,
      signal: ctx.signal,
      ...(selection ? { dataset: datasetSummaryOf(selection) } : {}),
      ...(stored ? {} : { inputs }),
    });
  } finally {
    reporter.close();
    // a fault while closing (the gateway, the pool) is said, never costs the run's summary
    await deps.close().catch((err: unknown) => {
      ctx.stderr.write(
        `flakegym: closing the run's workers and gateway: ${(err as Error)?.message ?? String(err)}\n`,
      );
    });
  }
  const { summary, lines } = result;
  const printed = opts.json ? JSON.stringify(summary, null, 2) : `${lines.join("\n")}\n${summary.out}`;
  ctx.stdout.write(runSecrets.text(`${printed}\n`));
  const exit = rolloutExitCode(summary, r.banner !== undefined);
  for (const line of rolloutEndNotes(summary, exit)) ctx.stderr.write(`${line}\n`);
  return exit.code;
}

/** Each task's profile (dataset rows or catalog tasks), for the store's toolchains. */
async function taskProfilesOf(
  config: RunConfig,
  selection: Awaited<ReturnType<typeof datasetSelectionOf>>,
): Promise<{ id: string; profile: string; catalog: boolean }[]> {
  if (selection) return selection.tasks.map((r) => ({ id: r.id, profile: r.profile, catalog: false }));
  return (await catalogTaskProfiles(config.tasks, config.catalog)).map((t) => ({ ...t, catalog: true }));
}

/** The line a rollout starts with: what runs, how many times, with which policy, where. Pure. */
function rolloutHeadline(
  config: RunConfig,
  selection: Awaited<ReturnType<typeof datasetSelectionOf>>,
  r: { readonly resume: boolean; readonly out: string },
  runId: string,
): string {
  const what = selection
    ? `${selection.tasks.length} row(s) of ${selection.config.file}`
    : config.tasks.join(", ");
  return (
    `${r.resume ? "resuming" : "rollout"} ${runId}: ${what} × ${config.groupSize} ` +
    `(policy ${config.policies.join(", ")}, concurrency ${config.concurrency}) → ${r.out}`
  );
}

/** What stderr says after a rollout: a stop and its hint, how to finish, why the exit code is 1. Pure. */
export function rolloutEndNotes(
  summary: RunSummary,
  exit: { readonly code: number; readonly why?: string | undefined },
): string[] {
  const notes: string[] = [];
  if (summary.stopped)
    notes.push(
      `run stopped [${summary.stopped.code}]: ${summary.stopped.message}\n  hint: free space on that filesystem first (nothing half-written was kept)`,
    );
  const pending = summary.atropos?.pending ?? 0;
  if (!summary.complete || pending > 0)
    notes.push(
      `${summary.complete ? `${pending} group(s) not sent to Atropos yet; ` : ""}finish with: flakegym rollout --resume ${summary.out}`,
    );
  if (exit.code === 1 && exit.why) notes.push(exit.why);
  return notes;
}

/**
 * `--dataset` with hidden tests (SWE-bench-family rows, Harbor dirs): the tasks are imported as a
 * catalog beside the run directory (`<out>.tasks`) and rolled out as catalog tasks.
 */
async function withImportedTasks(
  opts: RolloutOptions,
  ctx: { cwd: string; signal: AbortSignal; stderr: { write(s: string): unknown } },
  runId: string,
): Promise<RolloutOptions> {
  if (opts.dataset === undefined || opts.resume) return opts;
  const path = resolve(ctx.cwd, opts.dataset);
  const catalogDir = `${resolve(ctx.cwd, opts.out ?? join("runs", runId))}.tasks`;
  const imported = await datasetAsCatalog(path, catalogDir, {
    ...(opts.limit !== undefined ? { limit: opts.limit } : {}),
    signal: ctx.signal,
    note: (line) => ctx.stderr.write(`${printable(line)}\n`),
  });
  if (!imported) return opts;
  if (opts.catalog !== undefined) {
    throw new UsageError(
      "--catalog cannot be combined with --dataset",
      "drop --catalog: the dataset's tasks make the catalog",
    );
  }
  const { dataset: _d, limit: _l, ...rest } = opts;
  return { ...rest, task: imported.tasks, catalog: imported.catalog };
}

/** Every catalog task exists and loads; an unknown id is a usage error naming it and the known ones. */
async function checkCatalogTasks(ids: readonly string[], catalog: string | undefined): Promise<void> {
  for (const id of ids) {
    try {
      await loadTask(id, catalog ?? BUILTIN_CATALOG_DIR);
    } catch (err) {
      if (err instanceof FlakegymError && err.code === "E_TASK_NOT_FOUND")
        throw new UsageError(`--task ${id}: ${err.message}`, err.hint);
      throw err;
    }
  }
}

/** Rejected rows printed before the run (the first 50; summary.json lists all of them). */
const SHOWN_REJECTED = 50;

function reportRejected(sel: DatasetSelection, out: { write(s: string): unknown }): void {
  if (sel.rejected.length === 0) return;
  out.write(`${sel.rejected.length} row(s) of ${sel.config.file} rejected (skipped; the run goes on):\n`);
  for (const e of sel.rejected.slice(0, SHOWN_REJECTED)) out.write(`  ${printable(formatRowError(e))}\n`);
  if (sel.rejected.length > SHOWN_REJECTED) {
    out.write(`  … and ${sel.rejected.length - SHOWN_REJECTED} more (summary.json lists every one)\n`);
  }
}

/**
 * Run as the flake's `rollout` app with nothing pinning the backend: the flake's images on podman
 * when every task has one here, else the local backend with the reason printed.
 */
async function nixAppOptions(opts: RolloutOptions, ctx: CliContext): Promise<RolloutOptions> {
  if (!isNixApp(ctx.env) || pinningFlag(opts) !== undefined || !opts.task?.length) return opts;
  await checkCatalogTasks(opts.task, opts.catalog); // an unknown task is the usual usage error
  const choice = await nixAppDefault(opts.task, opts.catalog, ctx.env);
  return match(choice)
    .with({ kind: "nix" }, ({ backend, images }) => {
      ctx.stderr.write(
        `nix run .#rollout: workers run on the flake's images (--backend ${backend} --images ${images})\n`,
      );
      return { ...opts, backend, images };
    })
    .with({ kind: "local" }, ({ reason }) => {
      ctx.stderr.write(`${nixAppFallbackMessage(reason, storeOutputsOf(ctx.env) !== undefined)}\n`);
      return opts;
    })
    .exhaustive();
}
