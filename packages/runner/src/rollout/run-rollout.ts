import { setMaxListeners } from "node:events";
import { mkdir, readFile } from "node:fs/promises";
import { buildGroup, groupId } from "../emit/group.js";
import { messageWithHint } from "../errors.js";
import type { ProgressSink } from "../progress/events.js";
import { appendJsonLine, writeFileAtomic, writeJsonAtomic } from "../run-format/jsonl.js";
import {
  cleanTrajectory,
  moveToAttempt,
  priorDurationMs,
  readGroups,
  readRunState,
  runPaths,
  writeManifest,
} from "../run-format/run-dir.js";
import type {
  GroupLine,
  Outcome,
  RunConfig,
  SampleLine,
  Score,
  TrajectoryResult,
} from "../run-format/schema.js";
import { metricsLineOf } from "../run-format/trajectory-record.js";
import { ScoringSetupError } from "../scoring/scorer.js";
import type { AgentAttempt, RolloutDeps, RolloutTask, SnapshotRef } from "./deps.js";
import { diskFullStop, isDiskFullEnd } from "./disk-full-end.js";
import { createGroupSender } from "./group-sender.js";
import { createRunnerCpuLedger } from "./phase-cpu.js";
import { planRun, type TrajectorySlot } from "./plan.js";
import { type AttemptEnd, isRetryable, shouldRetry } from "./retry.js";
import { groupProvenanceOf, openManifest } from "./run-manifest.js";
import { createSemaphore } from "./semaphore.js";
import {
  type RunDatasetSummary,
  type RunSummary,
  renderSummary,
  runDurationMs,
  runSummaryOf,
} from "./summary.js";
import {
  infraOutcomeOf,
  notCompletedDetailOf,
  scoredOutcomeOf,
  trajectoryResultOf,
} from "./trajectory-result.js";

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

const isAbort = (signal: AbortSignal, err: unknown) =>
  signal.aborted || (err as Error)?.name === "AbortError";

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
  if (state.tornBytes > 0)
    progress({ type: "note", message: `resume: dropped ${state.tornBytes} bytes of torn lines` });
  const plan = planRun(cfg, state);
  const prior = o.resume ? await priorDurationMs(p) : undefined;
  let didWork =
    plan.toRun.length + plan.clean.length + plan.groupsMissing.length > 0 ||
    plan.metricsMissing.length + plan.samplesMissing.length > 0;
  for (const id of plan.clean) await cleanTrajectory(p, id);
  const results = new Map(state.results);

  const sampleLine = async (r: TrajectoryResult): Promise<SampleLine> => ({
    prompt: r.prompt,
    completion: await readFile(p.trajectory(r.trajectoryId).diff, "utf8").catch(() => ""),
    reward: r.reward as number,
    task_id: r.taskId,
    trajectory_id: r.trajectoryId,
  });
  for (const id of plan.metricsMissing) await appendJsonLine(p.metrics, metricsLineOf(results.get(id)!));
  for (const id of plan.samplesMissing) await appendJsonLine(p.samples, await sampleLine(results.get(id)!));

  const sender = await createGroupSender({
    config: cfg,
    paths: p,
    signal,
    pollMs: o.atroposPollMs ?? 1000,
    note: (message) => progress({ type: "note", message }),
    isAbort: (err) => isAbort(signal, err),
  });
  const send = (line: GroupLine) => {
    if (sender.send(line)) didWork = true;
  };

  const sem = createSemaphore(cfg.concurrency);
  // the runner's own CPU, split among the trajectories holding a slot (metrics runner_cpu_s)
  const runnerCpu = createRunnerCpuLedger();
  const snapLimiter = createSemaphore(1);
  const groupsWritten = new Set(state.groupTasks);

  async function writeGroup(taskId: string): Promise<void> {
    const members = [];
    for (let i = 0; i < cfg.groupSize; i++) {
      const r = [...results.values()].find((x) => x.taskId === taskId && x.index === i);
      if (!r) return; // not finished (interrupted)
      const dir = p.trajectory(r.trajectoryId).dir;
      const ex: Awaited<ReturnType<RolloutDeps["exportTrajectory"]>> =
        r.reward === null ? { messages: [] } : await deps.exportTrajectory({ dir, result: r });
      // a trajectory whose token export failed is left out with its reason; the group is still written
      if (ex.exportError !== undefined)
        progress({
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
        runId: manifest.runId,
        taskId,
        provenance: groupProvenanceOf(manifest, taskId),
        withTokens: cfg.tokenizer !== undefined,
      },
      members,
    );
    await appendJsonLine(p.groups, line);
    groupsWritten.add(taskId);
    send(line);
  }

  async function finishTrajectory(
    slot: TrajectorySlot,
    task: RolloutTask,
    attempt: AgentAttempt | undefined,
    outcome: Outcome,
    score: Score | null,
    snapshotMs: number,
    retries: TrajectoryResult["infraRetries"],
  ): Promise<TrajectoryResult> {
    const t = p.trajectory(slot.trajectoryId);
    const result = trajectoryResultOf({
      slot,
      task,
      attempt,
      outcome,
      score,
      snapshotMs,
      retries,
      finishedAt: new Date().toISOString(),
      runnerCpuS: runnerCpu.take(slot.trajectoryId),
    });
    if (score) await writeJsonAtomic(t.score, score);
    // result.json last: its presence is what makes the trajectory done
    await writeJsonAtomic(t.result, result);
    results.set(slot.trajectoryId, result);
    await appendJsonLine(p.metrics, metricsLineOf(result));
    if (result.reward !== null) await appendJsonLine(p.samples, await sampleLine(result));
    return result;
  }

  async function runSlot(slot: TrajectorySlot, task: RolloutTask, snap: SnapshotRef, snapshotMs: number) {
    const t = p.trajectory(slot.trajectoryId);
    const ev = (
      phase: "queued" | "forking" | "booting" | "agent" | "collecting" | "scoring",
      detail?: string,
    ) =>
      progress({
        type: "trajectory",
        trajectoryId: slot.trajectoryId,
        taskId: slot.taskId,
        phase,
        ...(detail ? { detail } : {}),
      });
    await mkdir(t.dir, { recursive: true });
    const retries: TrajectoryResult["infraRetries"] = [];
    let attempt: AgentAttempt | undefined;
    let infraDetail = "";
    ev("queued");
    for (let n = 0; ; n++) {
      attempt = undefined;
      let end: AttemptEnd;
      await sem.acquire(signal);
      runnerCpu.hold(slot.trajectoryId);
      try {
        attempt = await deps.runAgent({
          task,
          snapshot: snap,
          slot,
          dir: t.dir,
          signal,
          onPhase: (ph, detail) => ev(ph, detail),
          onTurn: (turns) =>
            progress({
              type: "trajectory",
              trajectoryId: slot.trajectoryId,
              taskId: slot.taskId,
              phase: "agent",
              turns,
            }),
        });
        end = { outcome: attempt.outcome };
        infraDetail = attempt.outcome.detail;
      } catch (err) {
        if (isAbort(signal, err)) throw err;
        // bad input (a policy or task this run cannot use) fails the same way every time: a task error
        if (isDiskFullEnd({ error: err })) throw diskFullStop(t.dir, { error: err });
        if (!isRetryable({ error: err })) throw err;
        end = { error: err };
        infraDetail = messageWithHint(err);
      } finally {
        runnerCpu.release(slot.trajectoryId);
        sem.release();
      }
      // a full disk: no retry (it is still full) and no result (resume runs it again)
      if (isDiskFullEnd(end)) throw diskFullStop(t.dir, end);
      if (!shouldRetry(end, n, cfg.maxInfraRetries)) break;
      retries.push({ attempt: n + 1, detail: infraDetail, at: new Date().toISOString() });
      progress({ type: "retry", trajectoryId: slot.trajectoryId, attempt: n + 1, detail: infraDetail });
      await moveToAttempt(p, slot.trajectoryId, n + 1);
    }
    if (!attempt || attempt.outcome.kind === "infra_error") {
      const outcome = infraOutcomeOf(infraDetail, retries.length);
      const r = await finishTrajectory(slot, task, attempt, outcome, null, snapshotMs, retries);
      progress({
        type: "trajectory",
        trajectoryId: slot.trajectoryId,
        taskId: slot.taskId,
        phase: "done",
        outcome: "infra_error",
        reward: null,
        detail: infraDetail,
      });
      return r;
    }
    await writeFileAtomic(t.diff, attempt.diff);
    ev("scoring");
    let score: Score | null = null;
    let scoreError = "";
    for (let n = 0; n <= cfg.maxInfraRetries && !score; n++) {
      // finishing a trajectory goes ahead of starting another one's agent
      await sem.acquire(signal, { first: true });
      runnerCpu.hold(slot.trajectoryId);
      try {
        score = await deps.score({ task, snapshot: snap, slot, diff: attempt.diff, signal });
      } catch (err) {
        if (isAbort(signal, err)) throw err;
        scoreError = (err as Error).message;
        if (err instanceof ScoringSetupError) break; // the task is broken; retrying will not help
        // a scoring run the machinery lost is an infra failure too: retried, and recorded
        if (n < cfg.maxInfraRetries) {
          const detail = `scoring: ${scoreError}`;
          retries.push({ attempt: retries.length + 1, detail, at: new Date().toISOString() });
          progress({ type: "retry", trajectoryId: slot.trajectoryId, attempt: retries.length, detail });
        }
      } finally {
        runnerCpu.release(slot.trajectoryId);
        sem.release();
      }
    }
    const outcome = scoredOutcomeOf(attempt.outcome, score, scoreError);
    const r = await finishTrajectory(slot, task, attempt, outcome, score, snapshotMs, retries);
    const detail = notCompletedDetailOf(r.outcome);
    progress({
      type: "trajectory",
      trajectoryId: slot.trajectoryId,
      taskId: slot.taskId,
      phase: "done",
      outcome: r.outcome.kind,
      reward: r.reward,
      turns: r.counts.turns,
      // why it did not complete (the limit named), on the trajectory's line
      ...(detail !== undefined ? { detail } : {}),
    });
    return r;
  }

  async function runTask(taskId: string, slots: readonly TrajectorySlot[]) {
    progress({ type: "task", taskId, phase: "snapshot" });
    const task = await deps.loadTask(taskId, signal);
    const t0 = Date.now();
    const snap = await snapLimiter.with(signal, () =>
      deps.snapshot(
        task,
        signal,
        (detail) => progress({ type: "task", taskId, phase: "snapshot", detail }),
        slots.length,
      ),
    );
    const snapshotMs = Date.now() - t0;
    manifest.tasks[taskId] = {
      ...manifest.tasks[taskId],
      rowId: task.rowId,
      ...(task.datasetRow !== undefined ? { datasetRow: task.datasetRow } : {}),
      snapshotKey: snap.key,
      profile: task.profile,
      ...(task.image ? { image: task.image } : {}),
    };
    await saveManifest();
    await sender.waitForCapacity(signal);
    progress({
      type: "task",
      taskId,
      phase: "running",
      detail: `snapshot ${snap.key.slice(0, 12)}${snap.cached ? " (cached)" : ""}`,
    });
    // every slot settles before the task ends (a failed one must not leave others writing later)
    const ran = await Promise.allSettled(slots.map((s) => runSlot(s, task, snap, snapshotMs)));
    const failed = ran.find((x) => x.status === "rejected");
    if (failed) throw failed.reason;
    progress({ type: "task", taskId, phase: "group" });
    await writeGroup(taskId);
    progress({ type: "task", taskId, phase: "done" });
  }

  let interrupted = false;
  const taskErrors = new Map<string, { code: string; message: string }>();
  try {
    // groups whose trajectories all finished before a kill, then pending Atropos sends
    for (const taskId of plan.groupsMissing) await writeGroup(taskId);
    if (sender.enabled) for (const line of await readGroups(p)) send(line);
    const byTask = new Map<string, TrajectorySlot[]>();
    for (const s of plan.toRun) byTask.set(s.taskId, [...(byTask.get(s.taskId) ?? []), s]);
    const tasksRun = [...byTask];
    const settled = await Promise.allSettled(tasksRun.map(([taskId, slots]) => runTask(taskId, slots)));
    settled.forEach((r, i) => {
      if (r.status === "fulfilled") return;
      if (isAbort(signal, r.reason)) {
        interrupted = true;
        return;
      }
      const err = r.reason as { code?: unknown; message?: unknown };
      const taskId = tasksRun[i]![0];
      taskErrors.set(taskId, {
        code: typeof err?.code === "string" ? err.code : "E_TASK",
        message: typeof err?.message === "string" ? err.message : String(r.reason),
      });
      progress({ type: "task", taskId, phase: "done", detail: `failed: ${taskErrors.get(taskId)!.message}` });
    });
    await sender.drain();
  } finally {
    await sender.disconnect(AbortSignal.timeout(5_000));
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
    groupsWritten,
    atroposOf: (taskId) => sender.statusOf(groupId(manifest.runId, taskId)),
    sendsToAtropos: cfg.atropos !== undefined,
    taskErrors,
    interrupted: interrupted || signal.aborted,
    durationMs: runDurationMs(prior, Date.now() - started, didWork),
    dataset: o.dataset,
  });
  await writeJsonAtomic(p.summary, summary);
  return { summary, lines: renderSummary(summary) };
}
