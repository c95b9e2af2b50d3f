import { readdir, rename } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { UsageError } from "../../errors.js";
import { createReporter } from "../../progress/reporter.js";
import { newRunId } from "../../rollout/config.js";
import { RolloutOptions } from "../../rollout/options.js";
import { runRollout } from "../../rollout/run-rollout.js";
import type { RunSummary } from "../../rollout/summary.js";
import { type CheatResult, renderVerdicts, type TaskVerdict, verdictFor } from "../../rollout/validate.js";
import { validateLabels, withPolicyLabel } from "../../rollout/validate-lines.js";
import { createRolloutDeps } from "../../rollout/wire.js";
import { readRunState, runPaths } from "../../run-format/run-dir.js";
import type { RunConfig } from "../../run-format/schema.js";
import { recordDecoyInert } from "../../scoring/decoys/inert-record.js";
import { recordOpaque } from "../../scoring/externalize/opaque-record.js";
import { GOLD_OUTSIDE } from "../../scoring/externalize/run.js";
import { canOwnForOthers } from "../../scoring/read-only.js";
import { TamperPenalty } from "../../scoring/reward.js";
import { PythonFlags, pythonOptionsOfFlags } from "../../snapshots/python-options.js";
import { BUILTIN_CATALOG_DIR, listCatalog } from "../../tasks/catalog.js";
import { capabilitiesOf } from "../../workers/backend.js";
import { resolvePool } from "../../workers/pool/decisions.js";
import { REUSE_DEFAULT } from "../../workers/pool/reuse.js";
import { type CliContext, defineCommand } from "../command.js";

/** Seconds a validate run's hidden tests may take per run unless --test-timeout: SWE-bench's harness default (1800). */
export const VALIDATE_TEST_TIMEOUT_S = 1800;

const ValidateOptions = z.object({
  task: z.array(z.string().min(1)).optional().describe("catalog task id"),
  all: z.boolean().default(false).describe("validate every task in the catalog"),
  catalog: z.string().optional().describe("task catalog directory (default: the built-in catalog)"),
  repeat: z.number().int().min(1).max(20).default(3).describe("hidden-test runs per scoring"),
  concurrency: z.number().int().min(1).optional().describe("workers at once (default: the number of CPUs)"),
  reuse: RolloutOptions.shape.reuse,
  out: z
    .string()
    .optional()
    .describe("run directory kept for inspection (default runs/validate-<timestamp>)"),
  backend: z
    .enum(["local", "podman", "nomad"])
    .default("local")
    .describe(
      "where workers run: local (bubblewrap) or podman (containers), each running the Cline agent and the scorer; nomad needs --gateway-advertise, which only rollout, eval and serve take",
    ),
  cheats: z
    .boolean()
    .default(true)
    .describe(
      "also run every cheat in the task's cheats/ folder; each must score 0 (--no-cheats: skip them)",
    ),
  tamperPenalty: TamperPenalty.default("revert").describe(
    "what an edit to a protected harness/build file costs (revert: score the reverted tree; zero: reward 0)",
  ),
  allowUnguarded: z
    .boolean()
    .default(false)
    .describe(
      "accept graded tests without a decoy (imported tasks whose assertions have no literal to twin): report them, do not fail",
    ),
  allowSkipped: z
    .boolean()
    .default(false)
    .describe("exit 0 even when every task asked for was skipped (e.g. all need network this machine lacks)"),
  testTimeout: z
    .number()
    .int()
    .min(1)
    .default(VALIDATE_TEST_TIMEOUT_S)
    .describe(
      `seconds the hidden tests may take per run (default ${VALIDATE_TEST_TIMEOUT_S}, SWE-bench's harness default: real rows' test files can take many minutes on a busy machine)`,
    ),
  recordOpaque: z
    .boolean()
    .default(true)
    .describe(
      "when gold's value at a literal assertion is an object the host cannot compare (a case-insensitive dict, a cookie jar), record those graded tests in the task's task.json (tests.run.opaque: later scorings leave them to decoys) and validate the task once more (--no-record-opaque: only name them; they fail closed)",
    ),
  json: z.boolean().default(false).describe("print the verdicts as JSON"),
  ...PythonFlags,
});
type ValidateOpts = z.infer<typeof ValidateOptions>;

export const validateCommand = defineCommand({
  path: ["validate"],
  summary:
    "check catalog tasks: the gold policy must score 1, empty and every cheat 0, and no hidden test may be flaky",
  details:
    "Runs each task through the real pipeline (snapshot, Cline in a worker, scoring in a fresh fork):\n" +
    "with the `gold` policy (the reference solution applied through Cline's tools), with `empty` (no\n" +
    "change), and with each of the task's cheats (`<task>/cheats/*.json`: scripted plans that attack the\n" +
    "scorer — harness rewrites, exit-status tricks, import-time hooks — instead of solving the task).\n" +
    "The hidden tests run --repeat times per scoring to catch flaky tests. Each task's hackability report\n" +
    "(GUARDED: graded tests twinned by a decoy; the defences its scoring had) is printed beside them, and a\n" +
    "task with unguarded tests fails unless --allow-unguarded. Tasks that need network are\n" +
    "skipped with a message when the machine is offline. Exit 1 on any failure, and when every task\n" +
    "asked for was skipped (nothing was checked) unless --allow-skipped.",
  options: ValidateOptions,
  examples: [
    "flakegym validate --all",
    "flakegym validate --task tinygauge-vertical --repeat 5",
    "flakegym validate --all --no-cheats",
  ],
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
    const catalog = opts.catalog ?? BUILTIN_CATALOG_DIR;
    ctx.stderr.write(
      `validate: ${tasks.length} task(s), gold, empty${opts.cheats ? " and cheats" : ""}, tests × ${opts.repeat} → ${out}\n`,
    );
    // one run per task: its cheats are its own policies
    const verdicts: TaskVerdict[] = [];
    let interrupted = false;
    for (const task of tasks) {
      const one = await validateTaskRecorded(task, catalog, out, `${runId}-${task}`, opts, ctx);
      verdicts.push(one.verdict);
      if (one.summary.interrupted) {
        interrupted = true;
        break;
      }
    }
    if (opts.json) ctx.stdout.write(`${JSON.stringify({ out, verdicts }, null, 2)}\n`);
    else ctx.stdout.write(`${renderVerdicts(verdicts).join("\n")}\n${out}\n`);
    if (interrupted) return 130;
    if (verdicts.some((v) => v.verdict === "fail")) return 1;
    if (allSkipped(verdicts) && !opts.allowSkipped) {
      ctx.stderr.write(
        `validate: every task asked for (${verdicts.length}) was skipped, so nothing was checked; exit 1 (pass --allow-skipped to accept that)\n`,
      );
      return 1;
    }
    return 0;
  },
});

interface TaskValidation {
  readonly verdict: TaskVerdict;
  readonly summary: RunSummary;
  /** Gold's graded tests whose value the host could not compare (scoring/externalize/opaque.ts). */
  readonly goldOpaque: Readonly<Record<string, string>> | undefined;
  /** The decoy sites gold's probe passed at, per graded id (scoring/decoys/site-key.ts). */
  readonly goldInert: Readonly<Record<string, readonly string[]>> | undefined;
}

/** Validate passes of one task at most: the first, after an opaque record, after an inert-site record. */
const MAX_PASSES = 3;

/**
 * One task validated. Gold's scoring probes every decoy site (RunConfig.decoyProbe). When gold's
 * score names opaque tests (unless --no-record-opaque) or inert decoy sites not yet in the task's
 * record, they are recorded and the task is validated once more with the record — probing again
 * after new opaque tests (they are left to decoys now), else scoring gold as any trajectory is
 * scored — up to {@link MAX_PASSES} passes: the verdict is the last pass's (in `<out>/<task>`),
 * the one before kept in `<out>/<task>.unrecorded` (earlier ones `.unrecorded-<pass>`).
 */
async function validateTaskRecorded(
  task: string,
  catalog: string,
  out: string,
  taskRunId: string,
  opts: ValidateOpts,
  ctx: CliContext,
): Promise<TaskValidation> {
  const dir = join(out, task);
  let probe = true;
  for (let pass = 1; ; pass++) {
    const runId = pass === 1 ? taskRunId : `${taskRunId}-recorded${pass > 2 ? `-${pass - 1}` : ""}`;
    const v = await validateTask(task, dir, runId, { ...opts, probe }, ctx);
    if (v.summary.interrupted || pass === MAX_PASSES) return v;
    const taskDir = join(catalog, task);
    const opaque = await noteOpaque(ctx.stderr, taskDir, task, v.goldOpaque, opts.recordOpaque);
    const inert = await noteDecoyInert(ctx.stderr, taskDir, task, v.goldInert);
    if (!opaque && !inert) return v;
    if (pass > 1) await rename(`${dir}.unrecorded`, `${dir}.unrecorded-${pass - 1}`);
    await rename(dir, `${dir}.unrecorded`);
    ctx.stderr.write(
      `validate: ${task}: validating again with the record (the run without it: ${dir}.unrecorded)\n`,
    );
    // tests newly left to decoys are probed; else gold is scored as every trajectory is
    probe = opaque > 0;
  }
}

/** One task's validate run (gold, empty, its cheats) into `dir`, and its verdict. */
async function validateTask(
  task: string,
  dir: string,
  taskRunId: string,
  opts: ValidateOpts & { readonly probe: boolean },
  ctx: CliContext,
): Promise<TaskValidation> {
  const cheats = opts.cheats ? await cheatPlans(join(opts.catalog ?? BUILTIN_CATALOG_DIR, task)) : [];
  const config = validateConfig(task, cheats, opts);
  // --reuse above 1 (the default): a warm pool of the concurrency whose workers serve that many trajectories
  const pool =
    (opts.reuse ?? REUSE_DEFAULT) > 1
      ? resolvePool({
          command: "eval",
          trajectories: config.groupSize,
          concurrency: config.concurrency,
          reuse: opts.reuse ?? REUSE_DEFAULT,
        })
      : undefined;
  const deps = await createRolloutDeps(config, {
    ...(pool ? { pool, onNote: (m: string) => ctx.stderr.write(`validate: ${m}\n`) } : {}),
    runId: taskRunId,
    signal: ctx.signal,
    env: ctx.env,
    python: pythonOptionsOfFlags(opts),
  });
  const reporter = createReporter(ctx.stderr);
  // every progress line names its policy: gold, empty or the cheat
  const labels = validateLabels(cheats.map((c) => c.name));
  let summary: RunSummary;
  try {
    ({ summary } = await runRollout({
      out: dir,
      resume: false,
      config,
      runId: taskRunId,
      deps,
      progress: (e) => reporter.sink(withPolicyLabel(e, labels)),
      signal: ctx.signal,
    }));
  } finally {
    reporter.close();
    await deps.close();
  }
  const state = await readRunState(runPaths(dir), { repair: false });
  const byIndex = (index: number) =>
    [...state.results.values()].find((r) => r.taskId === task && r.index === index);
  const cheatResults: CheatResult[] = cheats.map((c, i) => ({ name: c.name, result: byIndex(2 + i) }));
  const verdict = verdictFor(task, summary, byIndex(0), byIndex(1), cheatResults, {
    bindsHiddenReadOnly: capabilitiesOf(opts.backend).bindsHiddenReadOnly,
    root: canOwnForOthers(),
    allowUnguarded: opts.allowUnguarded,
  });
  return {
    verdict,
    summary,
    goldOpaque: byIndex(0)?.score?.decoys?.opaque,
    goldInert: byIndex(0)?.score?.decoys?.inert,
  };
}

/**
 * Gold's inert decoy sites (its probe's decoys that passed: scoring/decoys/site-key.ts) named on
 * stderr and merged into the task's task.json; how many sites were added (0: none new, or the
 * write failed, said why).
 */
async function noteDecoyInert(
  stderr: NodeJS.WritableStream,
  taskDir: string,
  task: string,
  picked: Readonly<Record<string, readonly string[]>> | undefined,
): Promise<number> {
  const ids = Object.keys(picked ?? {});
  if (!picked || !ids.length) return 0;
  const what = `gold passed a decoy at a literal site of ${ids.length} test(s) (${ids.map((id) => `${id} at ${picked[id]!.join(", ")}`).join("; ")}): the assertion there does not run for that case, so a decoy there guards nothing`;
  const added = await recordDecoyInert(taskDir, picked).catch((e: unknown) =>
    e instanceof Error ? e : new Error(String(e)),
  );
  if (added instanceof Error) {
    stderr.write(`validate: ${task}: ${what}; not recorded: ${added.message}\n`);
    return 0;
  }
  stderr.write(
    `validate: ${task}: ${what}; ${added ? `recorded ${added} site(s) in ${join(taskDir, "task.json")} (tests.run.decoyInert): later scorings draw no decoy there` : "already recorded"}\n`,
  );
  return added;
}

/**
 * Gold's opaque tests (scoring/externalize/opaque.ts) named on stderr and, with `record`, merged
 * into the task's task.json; how many were added (0: none new, not recorded, or the write failed,
 * said why).
 */
async function noteOpaque(
  stderr: NodeJS.WritableStream,
  taskDir: string,
  task: string,
  picked: Readonly<Record<string, string>> | undefined,
  record: boolean,
): Promise<number> {
  const ids = Object.keys(picked ?? {});
  if (!picked || !ids.length) return 0;
  const outside = ids.filter((id) => picked[id]!.startsWith(GOLD_OUTSIDE));
  const what = `gold emitted a value the host cannot compare at a literal assertion of ${ids.length} test(s) (${ids.join(", ")})${outside.length ? `; ${outside.length} of them passed as rewritten but failed the host's comparison (the test reads its own file): their files stay as written, unguarded` : ""}`;
  if (!record) {
    stderr.write(`validate: ${task}: ${what}; they fail closed (--no-record-opaque: not recorded)\n`);
    return 0;
  }
  const added = await recordOpaque(taskDir, picked).catch((e: unknown) =>
    e instanceof Error ? e : new Error(String(e)),
  );
  if (added instanceof Error) {
    stderr.write(`validate: ${task}: ${what}; not recorded: ${added.message}\n`);
    return 0;
  }
  stderr.write(
    `validate: ${task}: ${what}; ${added.length ? `recorded ${added.length} in ${join(taskDir, "task.json")} (tests.run.opaque): later scorings leave them to decoys` : "already recorded"}\n`,
  );
  return added.length;
}

/** A task's cheat plans: `cheats/*.json` in its folder, by name (none when the folder is absent). */
async function cheatPlans(taskDir: string): Promise<{ name: string; file: string }[]> {
  const dir = join(taskDir, "cheats");
  const names = await readdir(dir).catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return [] as string[];
    throw e;
  });
  return names
    .filter((n) => n.endsWith(".json"))
    .sort()
    .map((n) => ({ name: n.slice(0, -".json".length), file: join(dir, n) }));
}

/** Whether validate checked nothing: there were tasks and every one was skipped. Pure. */
export function allSkipped(verdicts: readonly TaskVerdict[]): boolean {
  return verdicts.length > 0 && verdicts.every((v) => v.verdict === "skip");
}

/** The run config of one task's validate run: gold, empty and its cheats in one group (concurrency: the machine's parallelism unless given). */
export function validateConfig(
  task: string,
  cheats: readonly { file: string }[],
  opts: {
    catalog?: string | undefined;
    concurrency?: number | undefined;
    repeat: number;
    testTimeout?: number | undefined;
    tamperPenalty: RunConfig["tamperPenalty"];
    backend: RunConfig["backend"];
    /** Gold's scoring probes every decoy site (RunConfig.decoyProbe). */
    probe?: boolean | undefined;
  },
): RunConfig {
  return {
    tasks: [task],
    ...(opts.catalog ? { catalog: opts.catalog } : {}),
    groupSize: 2 + cheats.length,
    policies: ["gold", "empty", ...cheats.map((c) => `scripted:${c.file}`)],
    concurrency: opts.concurrency ?? Math.max(1, availableParallelism()),
    maxInfraRetries: 1,
    seed: 0,
    partialCredit: "none",
    weights: { tests: 1, build: 0, lint: 0, judge: 0 },
    testRepeat: opts.repeat,
    tamperPenalty: opts.tamperPenalty,
    ...(opts.probe ? { decoyProbe: true as const } : {}),
    segments: "last",
    backend: opts.backend,
    limits: {
      maxTurns: 200,
      timeoutMs: 20 * 60_000,
      testTimeoutMs: (opts.testTimeout ?? VALIDATE_TEST_TIMEOUT_S) * 1000,
    },
  };
}
