import { appendFile, readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { type EvalRecord, readEvalRecord, writeEvalRecord } from "../../eval/eval-record.js";
import { evalExitCode } from "../../eval/exit-code.js";
import { EvalReport, Prices } from "../../eval/report.js";
import { type EvalItems, runEval } from "../../eval/run-eval.js";
import {
  describeIssues,
  loadScenario,
  resolveScenarioDir,
  type Scenario,
  suiteScenarioDirs,
} from "../../eval/scenario.js";
import { formatSweepResult, sweepLeftovers } from "../../gc/sweep.js";
import { probePolicyEndpoints } from "../../policy/probe.js";
import { parsePolicySpec, validatePolicySpecs } from "../../policy/spec.js";
import { createReporter } from "../../progress/reporter.js";
import { runSecrets } from "../../redact/redactor.js";
import { newRunId, resolveRolloutOptions } from "../../rollout/config.js";
import { type DatasetSelection, selectDataset } from "../../rollout/dataset-tasks.js";
import { RolloutOptions } from "../../rollout/options.js";
import { checkNewRunDir, checkOutDir } from "../../rollout/out-path.js";
import { acquireRunLock } from "../../rollout/run-lock.js";
import { createRolloutDeps } from "../../rollout/wire.js";
import type { RunConfig } from "../../run-format/schema.js";
import { pythonOptionsOfFlags } from "../../snapshots/python-options.js";
import { BUILTIN_CATALOG_DIR, loadTask } from "../../tasks/catalog.js";
import { withDatasetPath } from "../../tasks/hf-dataset.js";
import { poolEvent, poolHelp, resolvePool } from "../../workers/pool/decisions.js";
import { type CliContext, defineCommand } from "../command.js";

export const EvalOptions = RolloutOptions.pick({
  task: true,
  dataset: true,
  limit: true,
  catalog: true,
  policy: true,
  concurrency: true,
  pool: true,
  poolIdle: true,
  reuse: true,
  maxInfraRetries: true,
  seed: true,
  temperature: true,
  topP: true,
  topK: true,
  maxTokens: true,
  contextWindow: true,
  partialCredit: true,
  weightTests: true,
  weightBuild: true,
  weightLint: true,
  weightJudge: true,
  buildCmd: true,
  lintCmd: true,
  judge: true,
  testRepeat: true,
  backend: true,
  gatewayAdvertise: true,
  maxTurns: true,
  timeout: true,
  idleTimeout: true,
  modelSilenceTimeout: true,
  testTimeout: true,
  tamperPenalty: true,
  suspiciousPenalty: true,
  python: true,
  allowPythonMismatch: true,
}).extend({
  pool: RolloutOptions.shape.pool.describe(poolHelp("eval")),
  task: z.array(z.string().min(1)).optional().describe("a catalog task id to evaluate (repeat for several)"),
  dataset: z
    .string()
    .min(1)
    .optional()
    .describe(
      "evaluate the rows of a dataset file (.jsonl or .parquet, swe-agent-13k schema; or hf:<org>/<name>[@revision][:split] from the Hugging Face cache) instead; needs --policy; rows are scored by build and lint (their profile's commands unless --build-cmd/--lint-cmd) and --judge",
    ),
  scenario: z
    .array(z.string().min(1))
    .optional()
    .describe("a built-in scenario id or a scenario directory (holding scenario.json); repeat for several"),
  suite: z.string().optional().describe("a built-in suite of scenarios: smoke"),
  policy: z
    .array(z.string().min(1))
    .optional()
    .describe(
      "policy spec, one report column each (repeat): openai:<url>#<model>, anthropic:<url>#<model>, scripted:<file>, gold, empty (default: $FLAKEGYM_POLICY, else gold)",
    ),
  trials: z.number().int().min(1).max(100).default(3).describe("trials per (item, policy)"),
  out: z
    .string()
    .optional()
    .describe("eval directory (default evals/<timestamp>; evals/latest points at the newest)"),
  keepWorkspaces: z
    .enum(["failed", "all", "none"])
    .default("failed")
    .describe("which trials keep a copy of the agent's workspace (files and directories only)"),
  baseline: z
    .string()
    .optional()
    .describe(
      "report.json of an earlier eval: exit 1 on a statistically meaningful regression (docs/reference/eval.md)",
    ),
  prices: z
    .string()
    .optional()
    .describe('JSON file of per-token prices: {"<policy spec>": {"inputPerMTok": n, "outputPerMTok": n}}'),
  json: z.boolean().default(false).describe("print report.json instead of the summary"),
  resume: z
    .string()
    .optional()
    .describe(
      "continue the interrupted eval in this directory: finished trials are kept, the rest run (its eval.json holds the eval's settings; --concurrency may differ)",
    ),
});
export type EvalOptions = z.infer<typeof EvalOptions>;

async function readJsonFile<T>(flag: string, file: string, schema: z.ZodType<T>): Promise<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, "utf8"));
  } catch (err) {
    throw new UsageError(`${flag} ${file}: cannot read it as JSON: ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success)
    throw new UsageError(
      describeIssues(file, parsed.error),
      `${flag} takes a file as docs/reference/eval.md describes`,
    );
  return parsed.data;
}

/** The scenarios of --suite and --scenario, loaded and validated (usage errors name file and field). */
async function scenariosOf(o: EvalOptions, cwd: string): Promise<Scenario[]> {
  const dirs = [
    ...(o.suite ? suiteScenarioDirs(o.suite) : []),
    ...(await Promise.all((o.scenario ?? []).map((s) => resolveScenarioDir(s, cwd)))),
  ];
  const out: Scenario[] = [];
  for (const d of [...new Set(dirs)]) out.push(await loadScenario(d));
  return out;
}

async function checkTasks(ids: readonly string[], catalog: string): Promise<void> {
  for (const id of ids) {
    try {
      await loadTask(id, catalog);
    } catch (err) {
      throw new UsageError(`--task ${id}: ${(err as Error).message}`);
    }
  }
}

/** What is wrong with an eval's choice of items: none, or a dataset mixed with others. Pure. */
export function evalSelectionProblem(
  scenarios: number,
  tasks: number,
  dataset: boolean,
): UsageError | undefined {
  if (dataset && (scenarios || tasks))
    return new UsageError(
      "--dataset cannot be combined with --scenario, --suite or --task",
      "run dataset rows in an eval of their own",
    );
  if (!scenarios && !tasks && !dataset)
    return new UsageError(
      "nothing to evaluate",
      "give --suite smoke, --scenario <id|dir>, --task <id> or --dataset <file> (repeat --scenario/--task for several)",
    );
  return undefined;
}

/** Policy gold replays reference solutions: the scenarios without one, as an error. Pure. */
export function goldWithoutSolution(
  policies: readonly string[],
  scenarios: readonly { id: string; spec: { solution?: unknown } }[],
): UsageError | undefined {
  if (!policies.some((p) => parsePolicySpec(p).kind === "gold")) return undefined;
  const missing = scenarios.filter((s) => !s.spec.solution).map((s) => s.id);
  if (!missing.length) return undefined;
  return new UsageError(
    `policy gold replays a reference solution, and scenario(s) ${missing.join(", ")} have none`,
    "add a solution patch to scenario.json ('solution'), or evaluate them with other policies",
  );
}

export const evalCommand = defineCommand({
  path: ["eval"],
  summary: "run scenarios/tasks × policies × trials and report pass@k, pass^k and flakiness",
  details:
    "Each item (--scenario, --suite, --task, or rows of --dataset) is run --trials times with every --policy,\n" +
    "trials in parallel (--concurrency), on the same machinery as rollout: snapshots, isolated workers, the\n" +
    "real Cline core, the policy gateway, scoring by hidden tests / scenario checks in a fresh sandbox.\n" +
    "Writes evals/<timestamp>/ (--out): report.json, summary.md (also appended to $GITHUB_STEP_SUMMARY),\n" +
    "report.html (self-contained), <item>/<policy>/trial-<n>.log and trial-<n>/, and run/ (the rollout files).\n" +
    "Exit: 0 the eval ran; 1 a regression vs --baseline, an item that could not run or infra errors;\n" +
    "2 usage errors; 130 interrupted. See docs/reference/eval.md.",
  options: EvalOptions,
  examples: [
    "flakegym eval --suite smoke --policy gold --policy empty --trials 3",
    "flakegym eval --scenario create-file --policy scripted:plans/mixed.json --trials 5",
    "flakegym eval --suite smoke --policy openai:http://127.0.0.1:8000/v1#qwen3-8b --baseline evals/base/report.json",
    "flakegym eval --task semver-lite-caret-zero --policy gold --trials 2",
  ],
  async run(opts0, ctx) {
    const opts = opts0.resume === undefined ? await withDatasetPath(opts0, ctx) : opts0;
    // where the eval writes is checked, and held, before anything starts (no banner, no gc): the
    // same checks, lock and exit codes as rollout's --out
    const resuming = opts.resume !== undefined;
    const newId = newRunId();
    const evalDir = await checkOutDir(
      resuming ? "--resume" : "--out",
      opts.resume ?? opts.out ?? join("evals", newId),
      ctx.cwd,
    );
    const lock = await acquireRunLock(evalDir, "eval");
    try {
      if (!resuming) await checkNewRunDir(evalDir);
      const prepared = resuming
        ? await prepareResumedEval(evalDir, opts, ctx)
        : await prepareNewEval(newId, evalDir, opts, ctx);
      return await runPrepared(prepared, opts, ctx);
    } finally {
      await lock.release();
    }
  },
});

/** An eval ready to run: its items, config and files, checked. */
interface PreparedEval {
  readonly evalId: string;
  readonly evalDir: string;
  readonly items: EvalItems;
  readonly config: RunConfig;
  readonly trials: number;
  readonly keepWorkspaces: EvalRecord["keepWorkspaces"];
  readonly prices?: Prices | undefined;
  readonly baseline?: { file: string; report: EvalReport } | undefined;
  readonly banner?: string | undefined;
  readonly judgeApiKey?: string | undefined;
  readonly gatewayAdvertise?: string | undefined;
  readonly resume: boolean;
}

/** The --prices and --baseline files, read (usage errors name the flag). */
async function pricesAndBaseline(prices: string | undefined, baseline: string | undefined) {
  return {
    prices: prices ? await readJsonFile("--prices", prices, Prices) : undefined,
    baseline: baseline
      ? { file: baseline, report: await readJsonFile("--baseline", baseline, EvalReport) }
      : undefined,
  };
}

/** A new eval from its flags: every usage error before anything is written but eval.json. */
async function prepareNewEval(
  evalId: string,
  evalDir: string,
  opts: EvalOptions,
  ctx: CliContext,
): Promise<PreparedEval> {
  const scenarios = await scenariosOf(opts, ctx.cwd);
  const tasks = opts.task ?? [];
  const selection = evalSelectionProblem(scenarios.length, tasks.length, opts.dataset !== undefined);
  if (selection) throw selection;
  const r = resolveRolloutOptions(
    {
      ...opts,
      ...(opts.dataset === undefined ? { task: ["(eval)"] } : {}),
      out: evalDir,
      keepEqualScores: false,
      json: opts.json,
    } as RolloutOptions,
    ctx.env,
    ctx.cwd,
    evalId,
  );
  const catalog = opts.catalog ? resolve(ctx.cwd, opts.catalog) : BUILTIN_CATALOG_DIR;
  await validatePolicySpecs(r.config.policies, ctx.signal);
  await checkTasks(tasks, catalog);
  await probePolicyEndpoints(r.config.policies, ctx.signal);
  const gold = goldWithoutSolution(r.config.policies, scenarios);
  if (gold) throw gold;
  const files = {
    prices: opts.prices ? resolve(ctx.cwd, opts.prices) : undefined,
    baseline: opts.baseline ? resolve(ctx.cwd, opts.baseline) : undefined,
  };
  const { prices, baseline } = await pricesAndBaseline(files.prices, files.baseline);
  let dataset: DatasetSelection | undefined;
  if (r.dataset) dataset = await selectDataset(r.dataset.file, r.dataset.limit, { signal: ctx.signal });
  await writeEvalRecord(evalDir, {
    version: 1,
    evalId,
    createdAt: new Date().toISOString(),
    scenarioDirs: scenarios.map((s) => s.dir),
    tasks,
    catalog,
    ...(r.dataset ? { dataset: r.dataset } : {}),
    config: r.config,
    trials: opts.trials,
    keepWorkspaces: opts.keepWorkspaces,
    ...(files.prices ? { prices: files.prices } : {}),
    ...(files.baseline ? { baseline: files.baseline } : {}),
  });
  return {
    evalId,
    evalDir,
    items: { scenarios, tasks, catalog, ...(dataset ? { dataset } : {}) },
    config: r.config,
    trials: opts.trials,
    keepWorkspaces: opts.keepWorkspaces,
    prices,
    baseline,
    banner: r.banner,
    judgeApiKey: r.judgeApiKey,
    gatewayAdvertise: r.gatewayAdvertise,
    resume: false,
  };
}

/** An interrupted eval from its eval.json (only --concurrency of the flags applies). */
async function prepareResumedEval(
  evalDir: string,
  opts: EvalOptions,
  ctx: CliContext,
): Promise<PreparedEval> {
  const rec = await readEvalRecord(evalDir);
  const scenarios: Scenario[] = [];
  for (const d of rec.scenarioDirs) scenarios.push(await loadScenario(d));
  const dataset = rec.dataset
    ? await selectDataset(rec.dataset.file, rec.dataset.limit, { signal: ctx.signal })
    : undefined;
  const { prices, baseline } = await pricesAndBaseline(rec.prices, rec.baseline);
  await probePolicyEndpoints(rec.config.policies, ctx.signal);
  const judgeApiKey = ctx.env.FLAKEGYM_JUDGE_API_KEY ?? ctx.env.OPENAI_API_KEY;
  return {
    evalId: rec.evalId,
    evalDir,
    items: { scenarios, tasks: rec.tasks, catalog: rec.catalog, ...(dataset ? { dataset } : {}) },
    config: { ...rec.config, ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}) },
    trials: rec.trials,
    keepWorkspaces: rec.keepWorkspaces,
    prices,
    baseline,
    judgeApiKey,
    gatewayAdvertise: opts.gatewayAdvertise,
    resume: true,
  };
}

/**
 * Whether an eval updates `evals/latest`: only one in the default place (`<cwd>/evals/<id>`, new or
 * resumed); an eval given `--out` writes nothing outside that dir. Pure.
 */
export function linksLatest(evalDir: string, cwd: string, outGiven: boolean): boolean {
  return !outGiven && dirname(resolve(cwd, evalDir)) === resolve(cwd, "evals");
}

/** Runs a prepared eval, prints its summary, returns the exit status. */
async function runPrepared(p: PreparedEval, opts: EvalOptions, ctx: CliContext): Promise<number> {
  const { evalId, evalDir, items, config, trials } = p;
  const { scenarios, tasks, dataset } = items;
  if (p.banner) ctx.stderr.write(`\n  ${p.banner}\n\n`);
  const nItems = scenarios.length + tasks.length + (dataset?.tasks.length ?? 0);
  ctx.stderr.write(
    `${p.resume ? "resuming eval" : "eval"} ${evalId}: ${nItems} item(s) × ${config.policies.length} policy(ies) × ${trials} trial(s) ` +
      `(concurrency ${config.concurrency}) → ${evalDir}\n`,
  );
  const swept = await sweepLeftovers();
  for (const x of swept.results) ctx.stderr.write(`gc: ${formatSweepResult(x, false)}\n`);
  const reporter = createReporter(ctx.stderr);
  const pool = resolvePool({
    command: "eval",
    trajectories: nItems * config.policies.length * trials,
    concurrency: config.concurrency,
    ...(opts.pool !== undefined ? { size: opts.pool } : {}),
    ...(opts.poolIdle !== undefined ? { idleS: opts.poolIdle } : {}),
    ...(opts.reuse !== undefined ? { reuse: opts.reuse } : {}),
  });
  let result: Awaited<ReturnType<typeof runEval>>;
  try {
    result = await runEval({
      evalDir,
      evalId,
      items,
      config,
      trials,
      keepWorkspaces: p.keepWorkspaces,
      resume: p.resume,
      linkLatest: linksLatest(evalDir, ctx.cwd, opts.out !== undefined),
      ...(p.prices ? { prices: p.prices } : {}),
      ...(p.baseline ? { baseline: p.baseline } : {}),
      progress: reporter.sink,
      signal: ctx.signal,
      makeDeps: (cfg, keepWorkspace) =>
        createRolloutDeps(cfg, {
          runId: evalId,
          signal: ctx.signal,
          env: ctx.env,
          python: pythonOptionsOfFlags(opts),
          ...(p.judgeApiKey ? { judgeApiKey: p.judgeApiKey } : {}),
          ...(p.gatewayAdvertise ? { gatewayAdvertise: p.gatewayAdvertise } : {}),
          onNote: (m) => ctx.stderr.write(`${m}\n`),
          ...(pool ? { pool, onPool: (s) => reporter.sink(poolEvent(s)) } : {}),
          ...(keepWorkspace ? { keepWorkspace } : {}),
          ...(dataset ? { datasetTasks: dataset.tasks } : {}),
        }),
    });
  } finally {
    reporter.close();
  }
  const { report, summaryMd } = result;
  const printed = opts.json ? JSON.stringify(report, null, 2) : `${summaryMd}\n${evalDir}`;
  ctx.stdout.write(runSecrets.text(`${printed}\n`));
  const stepSummary = ctx.env.GITHUB_STEP_SUMMARY;
  if (stepSummary) await appendFile(stepSummary, runSecrets.text(`${summaryMd}\n`));
  const exit = evalExitCode(report, result.summary.interrupted);
  if (exit.why) ctx.stderr.write(`${exit.why}\n`);
  if (result.summary.interrupted) ctx.stderr.write(`finish with: flakegym eval --resume ${evalDir}\n`);
  return exit.code;
}
