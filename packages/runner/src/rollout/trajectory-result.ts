import type { Outcome, Score, TrajectoryResult } from "../run-format/schema.js";
import type { AgentAttempt, RolloutTask } from "./deps.js";
import type { TrajectorySlot } from "./plan.js";

/** A finished trajectory as the run directory records it: result.json (pure; its metrics line is run-format/trajectory-record.ts). */

/** How a finished trajectory came to be: the slot, its task, its last attempt, outcome and score. */
export interface TrajectoryEnd {
  readonly slot: TrajectorySlot;
  readonly task: RolloutTask;
  /** The last agent attempt (undefined: none got as far as an attempt). */
  readonly attempt: AgentAttempt | undefined;
  readonly outcome: Outcome;
  readonly score: Score | null;
  readonly snapshotMs: number;
  readonly retries: TrajectoryResult["infraRetries"];
  readonly finishedAt: string;
  /** The trajectory's share of the runner process's CPU, s (rollout/phase-cpu.ts). */
  readonly runnerCpuS?: number | undefined;
}

/** The trajectory's result.json. Pure. */
export function trajectoryResultOf(e: TrajectoryEnd): TrajectoryResult {
  const { slot, attempt, score } = e;
  return {
    trajectoryId: slot.trajectoryId,
    taskId: slot.taskId,
    index: slot.index,
    policy: slot.policy,
    outcome: e.outcome,
    reward: score ? score.reward : null,
    score,
    timings: {
      snapshotMs: e.snapshotMs,
      forkMs: attempt?.forkMs ?? 0,
      bootMs: attempt?.bootMs ?? 0,
      agentMs: attempt?.agentMs ?? 0,
      scoreMs: score?.durationMs ?? 0,
      ...(attempt?.bootCpuS !== undefined ? { bootCpuS: attempt.bootCpuS } : {}),
      ...(attempt?.agentCpuS !== undefined ? { agentCpuS: attempt.agentCpuS } : {}),
      ...(score?.cpuS !== undefined ? { scoreCpuS: score.cpuS } : {}),
      ...(e.runnerCpuS !== undefined ? { runnerCpuS: e.runnerCpuS } : {}),
    },
    counts: attempt?.counts ?? { turns: 0, tokensIn: 0, tokensOut: 0 },
    bootOk: attempt?.bootOk ?? false,
    ...(attempt?.pooledWorker !== undefined ? { pooledWorker: attempt.pooledWorker } : {}),
    infraRetries: e.retries,
    ...(attempt?.clineTaskId ? { clineTaskId: attempt.clineTaskId } : {}),
    prompt: e.task.prompt,
    finishedAt: e.finishedAt,
  };
}

/** The outcome of a trajectory whose every agent attempt failed the machinery. Pure. */
export function infraOutcomeOf(detail: string, retries: number): Outcome {
  return {
    kind: "infra_error",
    detail: `${detail} (after ${retries + 1} attempt${retries ? "s" : ""})`,
  };
}

/** The outcome of a trajectory: its agent's, unless it could not be scored. Pure. */
export function scoredOutcomeOf(agent: Outcome, score: Score | null, scoreError: string): Outcome {
  return score
    ? agent
    : { kind: "infra_error", detail: `scoring failed: ${scoreError} (agent outcome: ${agent.kind})` };
}

/** Why a trajectory did not complete (the limit named), for its progress line. Pure. */
export function notCompletedDetailOf(outcome: Outcome): string | undefined {
  if (outcome.kind === "completed") return undefined;
  return "limit" in outcome ? `${outcome.limit}: ${outcome.detail}` : outcome.detail;
}
