import { setMaxListeners } from "node:events";
import { mkdir } from "node:fs/promises";
import { createDeadline } from "@flakegym/nomad-jobs";
import { buildGroup, groupId } from "../emit/group.js";
import type { ProgressSink } from "../progress/events.js";
import { appendJsonLine, writeJsonAtomic } from "../run-format/jsonl.js";
import {
  cleanTrajectory,
  priorDurationMs,
  readGroups,
  readRunState,
  runPaths,
  writeManifest,
} from "../run-format/run-dir.js";
import type { GroupLine, RunConfig, RunManifest, TrajectoryResult } from "../run-format/schema.js";
import { metricsLineOf } from "../run-format/trajectory-record.js";
import { createSemaphore, type Semaphore } from "../workers/semaphore.js";
import type { RolloutDeps } from "./deps.js";
import { createGroupSender, type GroupSender } from "./group-sender.js";
import { createRunnerCpuLedger } from "./phase-cpu.js";
import { planRun, type TrajectorySlot } from "./plan.js";
import { groupProvenanceOf, openManifest } from "./run-manifest.js";
import { isAbort, runSlot, type SlotRun, sampleLine } from "./run-slot.js";
import { snapshotChange } from "./snapshot-change.js";
import {
  type RunDatasetSummary,
  type RunSummary,
  renderSummary,
  runDurationMs,
  runSummaryOf,
} from "./summary.js";

export interface RolloutOptions {
  /** The run directory. */
  readonly out: string;
  /** Continue the run in `out` (its run.json holds the config) instead of starting one. */
  readonly resume: boolean;
  /** The config of a new run (ignored when resuming, except `concurrency`, `maxInfraRetries`, `atropos`). */
  readonly config: RunConfig;
  readonly runId: string;
  readonly deps: RolloutDeps;
  readonly progress: ProgressSink;
  readonly signal: AbortSignal;
  /** With `--dataset`: what the run took from the file, for summary.json. */
  readonly dataset?: RunDatasetSummary;
  /** A new run's input files and their sha256 (run.json `inputs`; see run-inputs.ts). */
  readonly inputs?: Record<string, string>;
  /** Atropos polling cadence (Atropos itself uses 1 s). */
  readonly atroposPollMs?: number;
}

export interface RolloutResult {
  readonly summary: RunSummary;
  readonly lines: string[];
}

/** A rollout's state beyond its trajectories': the manifest, the groups and the Atropos sender. */
interface RolloutRun extends SlotRun {
  readonly manifest: RunManifest;
  /** Writes the manifest after every earlier write of it. */
  readonly saveManifest: () => Promise<void>;
  /** One snapshot build at a time. */
  readonly snapLimiter: Semaphore;
  /** The tasks whose group line is written. */
  readonly groupsWritten: Set<string>;
  readonly sender: GroupSender;
  /** Hands a group line to the sender (counts as work done when it sends). */
  readonly send: (line: GroupLine) => void;
}

/** Writes a task's group line once all its trajectories finished (else nothing: interrupted). */
async function writeGroup(run: RolloutRun, taskId: string): Promise<void> {
  const { cfg, p } = run;
  // a group line is final: never a second one with the same group_id
  if (run.groupsWritten.has(taskId)) return;
  const members = [];
  // by index once (a scan of every result per member was quadratic in the group's size)
  const byIndex = new Map<number, TrajectoryResult>();
  for (const x of run.results.values()) if (x.taskId === taskId) byIndex.set(x.index, x);
  for (let i = 0; i < cfg.groupSize; i++) {
    const r = byIndex.get(i);
    if (!r) return; // not finished (interrupted)
    const dir = p.trajectory(r.trajectoryId).dir;
    const ex: Awaited<ReturnType<RolloutDeps["exportTrajectory"]>> =
      r.reward === null ? { messages: [] } : await run.deps.exportTrajectory({ dir, result: r });
    // a trajectory whose token export failed is left out with its reason; the group is still written
    if (ex.exportError !== undefined)
      run.progress({
        type: "note",
        message: `${r.trajectoryId}: token export failed, left out of its group: ${ex.exportError}`,
      });
    members.push({
      result: r,
      messages: ex.messages,
      ...(ex.sequences ? { sequences: ex.sequences } : {}),
      ...(ex.exportError !== undefined ? { exportError: ex.exportError } : {}),
    });
  }
  const line = buildGroup(
    {
      runId: run.manifest.runId,
      taskId,
      provenance: groupProvenanceOf(run.manifest, taskId),
      withTokens: cfg.tokenizer !== undefined,
    },
    members,
  );
  await appendJsonLine(p.groups, line);
  run.groupsWritten.add(taskId);
  run.send(line);
}

/** One task: its snapshot (recorded in the manifest), its slots, then its group. */
async function runTask(run: RolloutRun, taskId: string, slots: readonly TrajectorySlot[]): Promise<void> {
  const { deps, signal, progress, manifest } = run;
  progress({ type: "task", taskId, phase: "snapshot" });
  const task = await deps.loadTask(taskId, signal);
  const t0 = Date.now();
  const snap = await run.snapLimiter.with(signal, () =>
    deps.snapshot(
      task,
      signal,
      (detail) => progress({ type: "task", taskId, phase: "snapshot", detail }),
      slots.length,
      manifest.tasks[taskId]?.treeDigest,
    ),
  );
  const snapshotMs = Date.now() - t0;
  const stored = manifest.tasks[taskId];
  const changed = snapshotChange(taskId, stored, snap);
  if (changed) throw changed;
  const treeDigest = stored?.treeDigest ?? snap.treeDigest;
  manifest.tasks[taskId] = {
    ...stored,
    ...(treeDigest ? { treeDigest } : {}),
    rowId: task.rowId,
    ...(task.datasetRow !== undefined ? { datasetRow: task.datasetRow } : {}),
    snapshotKey: snap.key,
    profile: task.profile,
    ...(snap.python ? { python: snap.python } : {}),
    ...(task.image ? { image: task.image } : {}),
  };
  await run.saveManifest();
  await run.sender.waitForCapacity(signal);
  progress({
    type: "task",
    taskId,
    phase: "running",
    detail: `snapshot ${snap.key.slice(0, 12)}${snap.cached ? " (cached)" : ""}`,
  });
  // every slot settles before the task ends (a failed one must not leave others writing later)
  const ran = await Promise.allSettled(slots.map((s) => runSlot(run, s, task, snap, snapshotMs)));
  const failed = ran.find((x) => x.status === "rejected");
  if (failed) throw failed.reason;
  progress({ type: "task", taskId, phase: "group" });
  await writeGroup(run, taskId);
  progress({ type: "task", taskId, phase: "done" });
}

/** Runs every task of `toRun` (each settles); whether the run was interrupted and which tasks failed. */
async function runTasks(
  run: RolloutRun,
  toRun: readonly TrajectorySlot[],
): Promise<{ interrupted: boolean; taskErrors: Map<string, { code: string; message: string }> }> {
  let interrupted = false;
  const taskErrors = new Map<string, { code: string; message: string }>();
  const byTask = new Map<string, TrajectorySlot[]>();
  for (const s of toRun) {
    const slots = byTask.get(s.taskId);
    if (slots) slots.push(s);
    else byTask.set(s.taskId, [s]);
  }
  const tasksRun = [...byTask];
  const settled = await Promise.allSettled(tasksRun.map(([taskId, slots]) => runTask(run, taskId, slots)));
  settled.forEach((r, i) => {
    if (r.status === "fulfilled") return;
    if (isAbort(run.signal, r.reason)) {
      interrupted = true;
      return;
    }
    const err = r.reason as { code?: unknown; message?: unknown };
    const taskId = tasksRun[i]![0];
    taskErrors.set(taskId, {
      code: typeof err?.code === "string" ? err.code : "E_TASK",
      message: typeof err?.message === "string" ? err.message : String(r.reason),
    });
    run.progress({
      type: "task",
      taskId,
      phase: "done",
      detail: `failed: ${taskErrors.get(taskId)!.message}`,
    });
  });
  return { interrupted, taskErrors };
}

/** What resuming found and does about it: torn tails dropped, bad lines skipped, lost members. Pure. */
export function resumeNotes(
  state: { readonly tornBytes: number; readonly badLines: readonly string[] },
  lost: readonly string[],
): string[] {
  return [
    ...(state.tornBytes > 0 ? [`resume: dropped ${state.tornBytes} bytes of torn lines`] : []),
    ...state.badLines.map(
      (bad) => `resume: ${bad} (its trajectory's line, if any, is written again from its result.json)`,
    ),
    ...lost.map(
      (id) =>
        `resume: ${id} is lost (its directory or result.json is gone) but its group is written, which is final: it is reported, not run again`,
    ),
  ];
}

/**
 * Runs (or resumes) a rollout: for each task, the snapshot, `groupSize` trajectories under a global
 * concurrency cap, scoring in fresh forks, the group, and the outputs. Every finished trajectory is
 * written before anything that depends on it; an interrupted run keeps what finished.
 */
export async function runRollout(o: RolloutOptions): Promise<RolloutResult> {
  const started = Date.now();
  const p = runPaths(o.out);
  const { deps, signal, progress } = o;
  // every worker, wait and watchdog of the run listens on this one signal
  setMaxListeners(0, signal);
  const manifest = await openManifest(p, o);
  const cfg = manifest.config;
  await mkdir(p.trajectories, { recursive: true });
  let manifestChain = writeManifest(p, manifest);
  const saveManifest = () => {
    manifestChain = manifestChain.then(() => writeManifest(p, manifest));
    return manifestChain;
  };
  await manifestChain;

  // what is already there (resume truncates torn JSONL tails first)
  const state = await readRunState(p, { repair: o.resume });
  const plan = planRun(cfg, state);
  for (const message of resumeNotes(state, plan.lost)) progress({ type: "note", message });
  const prior = o.resume ? await priorDurationMs(p) : undefined;
  let didWork =
    plan.toRun.length + plan.clean.length + plan.groupsMissing.length > 0 ||
    plan.metricsMissing.length + plan.samplesMissing.length > 0;
  for (const id of plan.clean) await cleanTrajectory(p, id);
  const results = new Map(state.results);
  for (const id of plan.metricsMissing) await appendJsonLine(p.metrics, metricsLineOf(results.get(id)!));
  for (const id of plan.samplesMissing)
    await appendJsonLine(p.samples, await sampleLine(p, results.get(id)!));

  const sender = await createGroupSender({
    config: cfg,
    paths: p,
    signal,
    pollMs: o.atroposPollMs ?? 1000,
    note: (message) => progress({ type: "note", message }),
    isAbort: (err) => isAbort(signal, err),
  });
  const run: RolloutRun = {
    p,
    cfg,
    deps,
    signal,
    progress,
    sem: createSemaphore(cfg.concurrency),
    runnerCpu: createRunnerCpuLedger(),
    results,
    manifest,
    saveManifest,
    snapLimiter: createSemaphore(1),
    groupsWritten: new Set(state.groupTasks),
    sender,
    send: (line) => {
      if (sender.send(line)) didWork = true;
    },
  };

  let ended: Awaited<ReturnType<typeof runTasks>>;
  try {
    // groups whose trajectories all finished before a kill, then pending Atropos sends
    for (const taskId of plan.groupsMissing) await writeGroup(run, taskId);
    if (sender.enabled) for (const line of await readGroups(p)) run.send(line);
    ended = await runTasks(run, plan.toRun);
    await sender.drain();
  } finally {
    using closing = createDeadline({ timeout: { limit: "the Atropos sender's disconnect", ms: 5_000 } });
    await sender.disconnect(closing.signal);
    await manifestChain.catch(() => {});
  }

  // summary: from what is on disk now
  const summary = runSummaryOf({
    runId: manifest.runId,
    out: p.dir,
    tasks: cfg.tasks,
    groupSize: cfg.groupSize,
    results: [...results.values()],
    expected: plan.all.length,
    groupsWritten: run.groupsWritten,
    atroposOf: (taskId) => sender.statusOf(groupId(manifest.runId, taskId)),
    sendsToAtropos: cfg.atropos !== undefined,
    taskErrors: ended.taskErrors,
    interrupted: ended.interrupted || signal.aborted,
    durationMs: runDurationMs(prior, Date.now() - started, didWork),
    dataset: o.dataset,
    lost: plan.lost,
  });
  await writeJsonAtomic(p.summary, summary);
  return { summary, lines: renderSummary(summary) };
}
