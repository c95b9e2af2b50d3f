import { cp, lstat, mkdir, readdir, rename, rm, symlink } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { FlakegymError } from "../errors.js";
import { readResultsReport } from "../export/served-record.js";
import { readTurnLog, type TurnRecord } from "../gateway/turn-log.js";
import type { ProgressSink } from "../progress/events.js";
import type { DatasetSelection } from "../rollout/dataset-tasks.js";
import type { RolloutDeps } from "../rollout/deps.js";
import { trajectoryId, trialOf } from "../rollout/plan.js";
import { isLockFile } from "../rollout/run-lock.js";
import { runRollout } from "../rollout/run-rollout.js";
import { type RunSummary, runSummaryOf } from "../rollout/summary.js";
import type { WireOptions } from "../rollout/wire.js";
import { writeFileAtomic } from "../run-format/jsonl.js";
import { readManifest, runPaths } from "../run-format/run-dir.js";
import type { RunConfig, Timings, TrajectoryResult } from "../run-format/schema.js";
import { tempPathBeside } from "../run-format/temp-name.js";
import { infraRetryCount } from "../run-format/trajectory-record.js";
import { FLAKEGYM_VERSION } from "../version.js";
import { compileScenario } from "./compile-scenario.js";
import { EVAL_RECORD_FILE } from "./eval-record.js";
import {
  buildReport,
  compareWithBaseline,
  type EvalReport,
  type Phases,
  type Prices,
  policyLabels,
  type TrialRow,
} from "./report.js";
import { renderReportHtml } from "./report-html.js";
import type { Scenario } from "./scenario.js";
import { renderSummaryMd } from "./summary-md.js";
import { checksOf, copyWorkspace, failuresOf, toolCallsOf, trialLog, trialPaths } from "./trial-files.js";

/**
 * `flakegym eval`: items (scenarios, catalog tasks or dataset rows) × policies × trials run as ONE
 * rollout (`runRollout`: the same snapshots, workers, gateway and scorer; trajectory i of an item
 * is trial ⌊i / P⌋ of policy i mod P), then laid out per item/policy/trial and reported.
 */

export type KeepWorkspaces = "failed" | "all" | "none";

export interface EvalItems {
  readonly scenarios: readonly Scenario[];
  /** Catalog task ids and the catalog they come from. */
  readonly tasks: readonly string[];
  readonly catalog: string;
  readonly dataset?: DatasetSelection;
}

export interface EvalRunOptions {
  /** A new or empty directory. */
  readonly evalDir: string;
  readonly evalId: string;
  readonly items: EvalItems;
  /** The run's config; `tasks`, `catalog` and `groupSize` are filled in here. */
  readonly config: RunConfig;
  readonly trials: number;
  readonly keepWorkspaces: KeepWorkspaces;
  readonly prices?: Prices;
  readonly baseline?: { readonly file: string; readonly report: EvalReport };
  readonly progress: ProgressSink;
  readonly signal: AbortSignal;
  /** Builds the rollout's effects (the CLI: createRolloutDeps). */
  readonly makeDeps: (config: RunConfig, keep: WireOptions["keepWorkspace"]) => Promise<RolloutDeps>;
  /** Make `<parent of evalDir>/latest` point at this eval (default true). */
  readonly linkLatest?: boolean;
  /** Continue the interrupted eval in `evalDir` (what finished is kept, the rest runs). */
  readonly resume?: boolean;
}

export interface EvalRunResult {
  readonly report: EvalReport;
  readonly summary: RunSummary;
  readonly summaryMd: string;
}

/** The item ids in report order, with where they came from. Throws on a duplicate id. */
export function evalItemsOf(items: EvalItems): EvalReport["items"] {
  const out: EvalReport["items"] = [
    ...items.scenarios.map((s) => ({ id: s.id, kind: "scenario" as const, source: s.dir })),
    ...items.tasks.map((id) => ({ id, kind: "task" as const, source: join(items.catalog, id) })),
    ...(items.dataset?.tasks ?? []).map((t) => ({
      id: t.id,
      kind: "dataset" as const,
      source: `${t.source.file} row ${t.source.row}`,
    })),
  ];
  const seen = new Set<string>();
  for (const i of out) {
    if (seen.has(i.id)) {
      throw new FlakegymError("E_USAGE", `item '${i.id}' is named twice (${i.kind} ${i.source})`, {
        hint: "each scenario, task and dataset row of an eval needs its own id",
      });
    }
    seen.add(i.id);
  }
  return out;
}

/** A new eval's directory holds nothing but its lock and its eval.json. */
async function ensureEmptyDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  if ((await readdir(dir)).some((n) => !isLockFile(n) && n !== EVAL_RECORD_FILE)) {
    throw new FlakegymError("E_OUT_EXISTS", `the eval directory ${dir} is not empty`, {
      hint: `continue that eval with --resume ${dir}, or pick another --out (the default, evals/<timestamp>, is always new)`,
    });
  }
}

/** Compiles scenarios and copies catalog tasks into one generated catalog directory. */
async function buildCatalog(items: EvalItems, dir: string): Promise<void> {
  for (const s of items.scenarios) await compileScenario(s, dir);
  for (const id of items.tasks)
    await cp(join(items.catalog, id), join(dir, id), { recursive: true, verbatimSymlinks: true });
}

/** Points `<parent>/latest` at the eval dir (relative), replacing only an older link. */
async function linkLatest(evalDir: string): Promise<void> {
  const link = join(dirname(evalDir), "latest");
  const existing = await lstat(link).catch(() => undefined);
  if (existing && !existing.isSymbolicLink()) return; // not ours to replace
  const tmp = tempPathBeside(link);
  await symlink(basename(evalDir), tmp);
  await rename(tmp, link);
}

/** The rollout config an eval runs: every item a task, trials × policies trajectories of each. Pure. */
export function evalRunConfig(
  base: RunConfig,
  items: EvalReport["items"],
  trials: number,
  catalogDir: string | undefined,
): RunConfig {
  return {
    ...base,
    tasks: items.map((i) => i.id),
    groupSize: trials * base.policies.length,
    ...(catalogDir !== undefined ? { catalog: catalogDir } : {}),
  };
}

/** Whether a trial's workspace is kept under `--keep-workspaces`. Pure. */
export function keepsWorkspace(keep: KeepWorkspaces, passed: boolean): boolean {
  return keep === "all" || (keep === "failed" && !passed);
}

/** Trials in report order: item, then policy, then trial number. Pure. */
export function sortTrials(
  trials: readonly TrialRow[],
  items: EvalReport["items"],
  policies: readonly string[],
): TrialRow[] {
  const itemAt = (id: string) => items.findIndex((i) => i.id === id);
  return [...trials].sort(
    (a, b) =>
      itemAt(a.item) - itemAt(b.item) ||
      policies.indexOf(a.policy) - policies.indexOf(b.policy) ||
      a.trial - b.trial,
  );
}

/** Each task's snapshot key as run.json records it (tasks without one left out). Pure. */
export function snapshotKeysOf(manifest: {
  tasks: Record<string, { snapshotKey?: string }>;
}): Record<string, string> {
  const keys: Record<string, string> = {};
  for (const [id, t] of Object.entries(manifest.tasks)) if (t.snapshotKey) keys[id] = t.snapshotKey;
  return keys;
}

/** A trial's report row from its result, its turns and where its files were laid out. Pure. */
export function trialRowOf(
  r: TrajectoryResult,
  trial: number,
  turns: readonly TurnRecord[],
  paths: ReturnType<typeof trialPaths>,
  hasWorkspace: boolean,
): TrialRow {
  return {
    item: r.taskId,
    policy: r.policy,
    trial,
    trajectoryId: r.trajectoryId,
    outcome: r.outcome.kind,
    ...("limit" in r.outcome && r.outcome.limit ? { limit: r.outcome.limit } : {}),
    detail: r.outcome.detail,
    reward: r.reward,
    passed: r.reward === 1,
    checks: checksOf(r.score),
    failures: failuresOf(r.score),
    flakyTests: r.score?.flaky ?? [],
    turns: r.counts.turns,
    toolCalls: toolCallsOf(turns),
    tokensIn: r.counts.tokensIn,
    tokensOut: r.counts.tokensOut,
    phases: wallPhasesOf(r.timings),
    infraRetries: infraRetryCount(r),
    links: {
      log: paths.log,
      dir: paths.dir,
      diff: paths.diff,
      ...(hasWorkspace ? { workspace: paths.workspace } : {}),
    },
  };
}

/** What the eval's one rollout leaves for its report. */
interface EvalRollout {
  readonly summary: RunSummary;
  readonly cline: EvalReport["provenance"]["cline"];
}

/** Runs the eval's one rollout over a generated catalog (removed after), keeping workspaces in `staging`. */
async function runEvalRollout(
  o: EvalRunOptions,
  items: EvalReport["items"],
  staging: string,
): Promise<{
  config: RunConfig;
  rollout: EvalRollout;
}> {
  // inside the eval dir, at the same path every session (run.json's catalog is sealed), made anew
  const catalogDir = join(o.evalDir, ".catalog");
  await rm(catalogDir, { recursive: true, force: true });
  await mkdir(catalogDir, { recursive: true });
  const config = evalRunConfig(o.config, items, o.trials, o.items.dataset ? undefined : catalogDir);
  try {
    await buildCatalog(o.items, catalogDir);
    const keep =
      o.keepWorkspaces === "none"
        ? undefined
        : async (slot: { trajectoryId: string }, workspace: string) => {
            await copyWorkspace(workspace, join(staging, slot.trajectoryId));
          };
    const deps = await o.makeDeps(config, keep);
    try {
      const { cline } = await deps.provenance();
      const { summary } = await runRollout({
        out: join(o.evalDir, "run"),
        // an eval stopped before its run.json was written starts its rollout anew
        resume:
          o.resume === true &&
          (await lstat(runPaths(join(o.evalDir, "run")).manifest).catch(() => undefined)) !== undefined,
        config,
        runId: o.evalId,
        deps,
        progress: o.progress,
        signal: o.signal,
      });
      return { config, rollout: { summary, cline } };
    } finally {
      await deps.close();
    }
  } finally {
    await rm(catalogDir, { recursive: true, force: true });
  }
}

/** Moves one trajectory's files to `<item>/<policy>/trial-<n>` (its log, and its kept workspace) and returns its row. */
async function layOutTrial(
  o: EvalRunOptions,
  r: TrajectoryResult,
  labels: readonly string[],
  staging: string,
): Promise<TrialRow> {
  const policies = o.config.policies;
  const p = runPaths(join(o.evalDir, "run"));
  const trial = trialOf(policies, r.index);
  const paths = trialPaths(r.taskId, labels[policies.indexOf(r.policy)] ?? "policy", trial);
  const from = p.trajectory(r.trajectoryId).dir;
  const turns = await readTurnLog(join(from, "turns.jsonl")).catch(() => [] as TurnRecord[]);
  await mkdir(dirname(join(o.evalDir, paths.dir)), { recursive: true });
  await rename(from, join(o.evalDir, paths.dir));
  await writeFileAtomic(join(o.evalDir, paths.log), trialLog(r, { item: r.taskId, trial }, turns));
  const kept = join(staging, r.trajectoryId);
  const isDir = async (d: string) => (await lstat(d).catch(() => undefined))?.isDirectory() === true;
  const keeps = keepsWorkspace(o.keepWorkspaces, r.reward === 1);
  // a resumed eval's trial laid out before already holds its workspace
  const hasWorkspace = keeps && ((await isDir(kept)) || (await isDir(join(o.evalDir, paths.workspace))));
  if (keeps && (await isDir(kept))) await rename(kept, join(o.evalDir, paths.workspace));
  return trialRowOf(r, trial, turns, paths, hasWorkspace);
}

/** Writes report.json, summary.md and report.html, and points `latest` here unless told not to. */
async function writeEvalFiles(o: EvalRunOptions, report: EvalReport): Promise<string> {
  const summaryMd = renderSummaryMd(report);
  await writeFileAtomic(join(o.evalDir, "report.json"), `${JSON.stringify(report, null, 2)}\n`);
  await writeFileAtomic(join(o.evalDir, "summary.md"), summaryMd);
  await writeFileAtomic(join(o.evalDir, "report.html"), renderReportHtml(report));
  if (o.linkLatest !== false) await linkLatest(o.evalDir);
  return summaryMd;
}

/** The eval run's finished trials; one whose result.json does not read is named in a note and skipped. */
async function evalResults(o: EvalRunOptions, runDir: string) {
  const { results, unreadable } = await readResultsReport(runDir);
  for (const u of unreadable)
    o.progress({ type: "note", message: `eval: trial ${u.trajectory_id} left out: ${u.reason}` });
  return results;
}

/**
 * The eval's rollout; interrupted (SIGINT) wherever it was — building snapshots, starting workers —
 * it still ends with a summary of what finished, so the report is always written (partial).
 */
async function rolloutOrPartial(
  o: EvalRunOptions,
  items: EvalReport["items"],
  staging: string,
): Promise<{ config: RunConfig; rollout: EvalRollout }> {
  try {
    return await runEvalRollout(o, items, staging);
  } catch (err) {
    if (!o.signal.aborted) throw err;
    const config = evalRunConfig(o.config, items, o.trials, undefined);
    const results = await evalResults(o, join(o.evalDir, "run"));
    const summary = runSummaryOf({
      runId: o.evalId,
      out: join(o.evalDir, "run"),
      tasks: config.tasks,
      groupSize: config.groupSize,
      results,
      expected: config.tasks.length * config.groupSize,
      groupsWritten: new Set(),
      atroposOf: () => "off",
      sendsToAtropos: false,
      taskErrors: new Map(),
      interrupted: true,
      durationMs: 0,
    });
    return {
      config,
      rollout: { summary, cline: { version: "unknown (interrupted before the workers started)" } },
    };
  }
}

/** A resumed eval: trials laid out by an earlier session go back into run/ (the rollout resumes from there). */
async function gatherLaidOut(o: EvalRunOptions, items: EvalReport["items"], labels: readonly string[]) {
  const p = runPaths(join(o.evalDir, "run"));
  const policies = o.config.policies;
  for (const item of items) {
    for (let i = 0; i < o.trials * policies.length; i++) {
      const paths = trialPaths(item.id, labels[i % policies.length]!, trialOf(policies, i));
      const laid = join(o.evalDir, paths.dir);
      const back = p.trajectory(trajectoryId(item.id, i)).dir;
      if ((await lstat(laid).catch(() => undefined)) && !(await lstat(back).catch(() => undefined))) {
        await mkdir(dirname(back), { recursive: true });
        await rename(laid, back);
      }
    }
  }
}

/** Runs an eval and writes its directory: run/, <item>/<policy>/trial-<n>{.log,/}, report.json, summary.md, report.html. */
export async function runEval(o: EvalRunOptions): Promise<EvalRunResult> {
  const started = Date.now();
  const createdAt = new Date().toISOString();
  if (!o.resume) await ensureEmptyDir(o.evalDir);
  const items = evalItemsOf(o.items);
  const policies = o.config.policies;
  const labels = policyLabels(policies);
  if (o.resume) await gatherLaidOut(o, items, labels);
  const staging = join(o.evalDir, ".workspaces");
  const { config, rollout } = await rolloutOrPartial(o, items, staging);
  const { summary } = rollout;
  const runDir = join(o.evalDir, "run");
  const rows: TrialRow[] = [];
  for (const r of await evalResults(o, runDir)) rows.push(await layOutTrial(o, r, labels, staging));
  await rm(staging, { recursive: true, force: true });
  const manifest = await readManifest(runPaths(runDir)).catch(() => ({ tasks: {} }));
  let report = buildReport({
    evalId: o.evalId,
    createdAt,
    durationMs: Date.now() - started,
    complete: summary.complete && !summary.interrupted,
    provenance: {
      flakegymVersion: FLAKEGYM_VERSION,
      cline: rollout.cline,
      node: process.version,
      runId: o.evalId,
      seed: config.seed,
      trials: o.trials,
      testRepeat: config.testRepeat,
      concurrency: config.concurrency,
      backend: config.backend,
      snapshotKeys: snapshotKeysOf(manifest),
    },
    items,
    policies: policies.map((spec, i) => ({ spec, label: labels[i]! })),
    trials: sortTrials(rows, items, policies),
    ...(o.prices ? { prices: o.prices } : {}),
    itemErrors: summary.tasks.flatMap((t) => (t.error ? [{ item: t.taskId, ...t.error }] : [])),
  });
  if (o.baseline)
    report = { ...report, baseline: compareWithBaseline(report, o.baseline.report, o.baseline.file) };
  return { report, summary, summaryMd: await writeEvalFiles(o, report) };
}

/** The wall-time phases of a trajectory's timings (the report's `phases`; its CPU fields stay in metrics.jsonl). Pure. */
export function wallPhasesOf(t: Timings): Phases {
  return {
    snapshotMs: t.snapshotMs,
    forkMs: t.forkMs,
    bootMs: t.bootMs,
    agentMs: t.agentMs,
    scoreMs: t.scoreMs,
  };
}
