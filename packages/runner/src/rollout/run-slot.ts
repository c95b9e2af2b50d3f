import { mkdir, readFile } from "node:fs/promises";
import { messageWithHint } from "../errors.js";
import type { ProgressSink } from "../progress/events.js";
import { appendJsonLine, writeFileAtomic, writeJsonAtomic } from "../run-format/jsonl.js";
import { moveToAttempt, type RunPaths } from "../run-format/run-dir.js";
import type { Outcome, RunConfig, SampleLine, Score, TrajectoryResult } from "../run-format/schema.js";
import { metricsLineOf } from "../run-format/trajectory-record.js";
import { ScoringSetupError } from "../scoring/scorer.js";
import type { Semaphore } from "../workers/semaphore.js";
import type { AgentAttempt, RolloutDeps, RolloutTask, SnapshotRef } from "./deps.js";
import { diskFullStop, isDiskFullEnd } from "./disk-full-end.js";
import type { RunnerCpuLedger } from "./phase-cpu.js";
import type { TrajectorySlot } from "./plan.js";
import { type AttemptEnd, isRetryable, shouldRetry } from "./retry.js";
import {
  infraOutcomeOf,
  notCompletedDetailOf,
  scoredOutcomeOf,
  trajectoryResultOf,
} from "./trajectory-result.js";

/**
 * One trajectory of a rollout (`runRollout`): the agent, retried on infra failures, then scoring
 * in a fresh fork, retried too, then its files. Functions over the run's explicit state.
 */

/** What a rollout's trajectories share: the run's paths, config, effects and finished results. */
export interface SlotRun {
  readonly p: RunPaths;
  readonly cfg: RunConfig;
  readonly deps: RolloutDeps;
  readonly signal: AbortSignal;
  readonly progress: ProgressSink;
  /** The global concurrency cap (agents and scoring runs). */
  readonly sem: Semaphore;
  /** The runner's own CPU, split among the trajectories holding a slot (metrics runner_cpu_s). */
  readonly runnerCpu: RunnerCpuLedger;
  /** Finished trajectories by id (those of earlier sessions of a resumed run included). */
  readonly results: Map<string, TrajectoryResult>;
}

/** The per-trajectory context of one slot's run. */
interface SlotContext {
  readonly slot: TrajectorySlot;
  readonly task: RolloutTask;
  readonly snap: SnapshotRef;
  readonly snapshotMs: number;
  readonly dir: string;
  readonly retries: TrajectoryResult["infraRetries"];
}

export const isAbort = (signal: AbortSignal, err: unknown) =>
  signal.aborted || (err as Error)?.name === "AbortError";

type Phase = "queued" | "forking" | "booting" | "agent" | "collecting" | "scoring";

function phaseEvent(run: SlotRun, slot: TrajectorySlot, phase: Phase, detail?: string): void {
  run.progress({
    type: "trajectory",
    trajectoryId: slot.trajectoryId,
    taskId: slot.taskId,
    phase,
    ...(detail ? { detail } : {}),
  });
}

/** A finished trajectory's samples.jsonl line (its diff is the completion). */
export async function sampleLine(p: RunPaths, r: TrajectoryResult): Promise<SampleLine> {
  return {
    prompt: r.prompt,
    completion: await readFile(p.trajectory(r.trajectoryId).diff, "utf8").catch(() => ""),
    reward: r.reward as number,
    task_id: r.taskId,
    trajectory_id: r.trajectoryId,
  };
}

/** Writes a finished trajectory: score.json, then result.json (its presence makes it done), then its lines. */
async function finishTrajectory(
  run: SlotRun,
  c: SlotContext,
  attempt: AgentAttempt | undefined,
  outcome: Outcome,
  score: Score | null,
): Promise<TrajectoryResult> {
  const t = run.p.trajectory(c.slot.trajectoryId);
  const result = trajectoryResultOf({
    slot: c.slot,
    task: c.task,
    attempt,
    outcome,
    score,
    snapshotMs: c.snapshotMs,
    retries: c.retries,
    finishedAt: new Date().toISOString(),
    runnerCpuS: run.runnerCpu.take(c.slot.trajectoryId),
  });
  if (score) await writeJsonAtomic(t.score, score);
  // result.json last: its presence is what makes the trajectory done
  await writeJsonAtomic(t.result, result);
  run.results.set(c.slot.trajectoryId, result);
  await appendJsonLine(run.p.metrics, metricsLineOf(result));
  if (result.reward !== null) await appendJsonLine(run.p.samples, await sampleLine(run.p, result));
  return result;
}

/** Runs `f` holding a slot of the cap and the runner-CPU share of this trajectory. */
async function holdingSlot<T>(run: SlotRun, c: SlotContext, first: boolean, f: () => Promise<T>): Promise<T> {
  await run.sem.acquire(run.signal, first ? { first: true } : undefined);
  run.runnerCpu.hold(c.slot.trajectoryId);
  try {
    return await f();
  } finally {
    run.runnerCpu.release(c.slot.trajectoryId);
    run.sem.release();
  }
}

/** One agent attempt and how it ended; an error that retrying cannot help is thrown. */
async function agentAttempt(
  run: SlotRun,
  c: SlotContext,
): Promise<{ attempt?: AgentAttempt; end: AttemptEnd; detail: string }> {
  const { slot } = c;
  return holdingSlot(run, c, false, async () => {
    try {
      const attempt = await run.deps.runAgent({
        task: c.task,
        snapshot: c.snap,
        slot,
        dir: c.dir,
        signal: run.signal,
        onPhase: (ph, detail) => phaseEvent(run, slot, ph, detail),
        onTurn: (turns) =>
          run.progress({
            type: "trajectory",
            trajectoryId: slot.trajectoryId,
            taskId: slot.taskId,
            phase: "agent",
            turns,
          }),
      });
      return { attempt, end: { outcome: attempt.outcome }, detail: attempt.outcome.detail };
    } catch (err) {
      if (isAbort(run.signal, err)) throw err;
      // bad input (a policy or task this run cannot use) fails the same way every time: a task error
      if (isDiskFullEnd({ error: err })) throw diskFullStop(c.dir, { error: err });
      if (!isRetryable({ error: err })) throw err;
      return { end: { error: err }, detail: messageWithHint(err) };
    }
  });
}

/** The agent, retried on infra failures; the last attempt and the last infra detail. */
async function agentWithRetries(
  run: SlotRun,
  c: SlotContext,
): Promise<{ attempt: AgentAttempt | undefined; infraDetail: string }> {
  let infraDetail = "";
  for (let n = 0; ; n++) {
    const a = await agentAttempt(run, c);
    infraDetail = a.detail;
    // a full disk: no retry (it is still full) and no result (resume runs it again)
    if (isDiskFullEnd(a.end)) throw diskFullStop(c.dir, a.end);
    if (!shouldRetry(a.end, n, run.cfg.maxInfraRetries)) return { attempt: a.attempt, infraDetail };
    c.retries.push({ attempt: n + 1, detail: infraDetail, at: new Date().toISOString() });
    run.progress({ type: "retry", trajectoryId: c.slot.trajectoryId, attempt: n + 1, detail: infraDetail });
    await moveToAttempt(run.p, c.slot.trajectoryId, n + 1);
  }
}

/** Scores the attempt's diff, retrying a scoring run the machinery lost; null and why when it never scored. */
async function scoreWithRetries(
  run: SlotRun,
  c: SlotContext,
  diff: string,
): Promise<{ score: Score | null; scoreError: string }> {
  let scoreError = "";
  for (let n = 0; n <= run.cfg.maxInfraRetries; n++) {
    try {
      // finishing a trajectory goes ahead of starting another one's agent
      const score = await holdingSlot(run, c, true, () =>
        run.deps.score({ task: c.task, snapshot: c.snap, slot: c.slot, diff, signal: run.signal }),
      );
      return { score, scoreError };
    } catch (err) {
      if (isAbort(run.signal, err)) throw err;
      scoreError = (err as Error).message;
      if (err instanceof ScoringSetupError) break; // the task is broken; retrying will not help
      // a scoring run the machinery lost is an infra failure too: retried, and recorded
      if (n < run.cfg.maxInfraRetries) {
        const detail = `scoring: ${scoreError}`;
        c.retries.push({ attempt: c.retries.length + 1, detail, at: new Date().toISOString() });
        run.progress({ type: "retry", trajectoryId: c.slot.trajectoryId, attempt: c.retries.length, detail });
      }
    }
  }
  return { score: null, scoreError };
}

/** Runs one trajectory to its result (written before this returns). */
export async function runSlot(
  run: SlotRun,
  slot: TrajectorySlot,
  task: RolloutTask,
  snap: SnapshotRef,
  snapshotMs: number,
): Promise<TrajectoryResult> {
  const t = run.p.trajectory(slot.trajectoryId);
  await mkdir(t.dir, { recursive: true });
  const c: SlotContext = { slot, task, snap, snapshotMs, dir: t.dir, retries: [] };
  phaseEvent(run, slot, "queued");
  const { attempt, infraDetail } = await agentWithRetries(run, c);
  const done = { type: "trajectory" as const, trajectoryId: slot.trajectoryId, taskId: slot.taskId };
  if (!attempt || attempt.outcome.kind === "infra_error") {
    const outcome = infraOutcomeOf(infraDetail, c.retries.length);
    const r = await finishTrajectory(run, c, attempt, outcome, null);
    run.progress({ ...done, phase: "done", outcome: "infra_error", reward: null, detail: infraDetail });
    return r;
  }
  await writeFileAtomic(t.diff, attempt.diff);
  phaseEvent(run, slot, "scoring");
  const { score, scoreError } = await scoreWithRetries(run, c, attempt.diff);
  const r = await finishTrajectory(
    run,
    c,
    attempt,
    scoredOutcomeOf(attempt.outcome, score, scoreError),
    score,
  );
  const detail = notCompletedDetailOf(r.outcome);
  run.progress({
    ...done,
    phase: "done",
    outcome: r.outcome.kind,
    reward: r.reward,
    turns: r.counts.turns,
    // why it did not complete (the limit named), on the trajectory's line
    ...(detail !== undefined ? { detail } : {}),
  });
  return r;
}
