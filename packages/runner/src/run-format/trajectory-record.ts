import { z } from "zod";
import { InfraRetryCount, type MetricsLine, type TrajectoryResult } from "./schema.js";

/**
 * One trajectory record — result.json's `TrajectoryResult` — and every shape derived from it, each
 * by one pure conversion: the metrics line (`metrics.jsonl`), the viewer's row (from a metrics
 * line), the served record's result fields (`flakegym serve`, `flakegym export`) and the Atropos
 * override of `groups.jsonl`. Retries are a list in the record and a count ({@link InfraRetryCount},
 * {@link infraRetryCount}) in every derived shape.
 */

/** How many infra failures were retried before the result. Pure. */
export function infraRetryCount(r: Pick<TrajectoryResult, "infraRetries">): InfraRetryCount {
  return r.infraRetries.length;
}

/** The trajectory's line of metrics.jsonl. Pure. */
export function metricsLineOf(r: TrajectoryResult): MetricsLine {
  return {
    task_id: r.taskId,
    trajectory_id: r.trajectoryId,
    snapshot_ms: r.timings.snapshotMs,
    fork_ms: r.timings.forkMs,
    boot_ms: r.timings.bootMs,
    agent_ms: r.timings.agentMs,
    score_ms: r.timings.scoreMs,
    ...(r.timings.bootCpuS !== undefined ? { boot_cpu_s: r.timings.bootCpuS } : {}),
    ...(r.timings.agentCpuS !== undefined ? { agent_cpu_s: r.timings.agentCpuS } : {}),
    ...(r.timings.scoreCpuS !== undefined ? { score_cpu_s: r.timings.scoreCpuS } : {}),
    ...(r.timings.runnerCpuS !== undefined ? { runner_cpu_s: r.timings.runnerCpuS } : {}),
    boot_ok: r.bootOk,
    ...(r.pooledWorker !== undefined ? { pooled_worker: r.pooledWorker } : {}),
    outcome: r.outcome.kind,
    ...("limit" in r.outcome ? { limit: r.outcome.limit } : {}),
    outcome_detail: r.outcome.detail,
    reward: r.reward,
    turns: r.counts.turns,
    tokens_in: r.counts.tokensIn,
    tokens_out: r.counts.tokensOut,
    infra_retries: infraRetryCount(r),
    ...(r.score?.tampered?.length ? { tampered: r.score.tampered } : {}),
  };
}

/** Each phase's wall time of a trajectory, ms, as the viewer's rows and the served record show it. */
export const PhaseMs = z
  .object({
    snapshot: z.number(),
    fork: z.number(),
    boot: z.number(),
    agent: z.number(),
    score: z.number(),
  })
  .strict();
export type PhaseMs = z.infer<typeof PhaseMs>;

/** One row of the viewer's run table (from the run's metrics line). */
export const TrajectoryRow = z
  .object({
    id: z.string(),
    task: z.string(),
    index: z.number().int().nullable(),
    policy: z.string().nullable(),
    outcome: z.string(),
    limit: z.string().optional(),
    detail: z.string(),
    reward: z.number().nullable(),
    turns: z.number().int(),
    tokensIn: z.number().int(),
    tokensOut: z.number().int(),
    timings: PhaseMs,
    infraRetries: InfraRetryCount,
    tampered: z.number().int(),
  })
  .strict();
export type TrajectoryRow = z.infer<typeof TrajectoryRow>;

/** `…-t3` → 3 (a trajectory id's index in its group); null for an id of another shape. Pure. */
export function indexOfTrajectoryId(id: string): number | null {
  const m = /-t(\d+)$/.exec(id);
  return m ? Number(m[1]) : null;
}

/** A metrics line as the viewer's row; `policies` (run.json's, in order) name its policy. Pure. */
export function viewRowOf(m: MetricsLine, policies: readonly string[]): TrajectoryRow {
  const index = indexOfTrajectoryId(m.trajectory_id);
  return {
    id: m.trajectory_id,
    task: m.task_id,
    index,
    policy: index === null || policies.length === 0 ? null : policies[index % policies.length]!,
    outcome: m.outcome,
    ...(m.limit ? { limit: m.limit } : {}),
    detail: m.outcome_detail,
    reward: m.reward,
    turns: m.turns,
    tokensIn: m.tokens_in,
    tokensOut: m.tokens_out,
    timings: {
      snapshot: m.snapshot_ms,
      fork: m.fork_ms,
      boot: m.boot_ms,
      agent: m.agent_ms,
      score: m.score_ms,
    },
    infraRetries: m.infra_retries,
    tampered: m.tampered?.length ?? 0,
  };
}

/**
 * The fields of a served record that come from the result (`export/served-record.ts` adds the run
 * id, the token segments, the model time and the provenance). Pure.
 */
export function servedResultOf(r: TrajectoryResult) {
  const s = r.score;
  return {
    trajectory_id: r.trajectoryId,
    task_id: r.taskId,
    index: r.index,
    policy: r.policy,
    outcome: r.outcome,
    reward: r.reward,
    reward_breakdown: s
      ? {
          terms: s.terms.map((t) => ({ name: t.name, weight: t.weight, value: t.value })),
          ...(s.tests ? { tests: s.tests } : {}),
          ...(s.tampered?.length ? { tampered: s.tampered } : {}),
        }
      : null,
    timings_ms: {
      snapshot: r.timings.snapshotMs,
      fork: r.timings.forkMs,
      boot: r.timings.bootMs,
      agent: r.timings.agentMs,
      score: r.timings.scoreMs,
    },
    turns: r.counts.turns,
    infra_retries: infraRetryCount(r),
    prompt: r.prompt,
  };
}

/**
 * A trajectory's entry in its Atropos group's `overrides` (one per exported sequence);
 * `generationParams`: the sampling parameters it was sent with, when known. Pure.
 */
export function atroposOverrideOf(r: TrajectoryResult, generationParams: object | undefined) {
  const s = r.score;
  return {
    trajectory_id: r.trajectoryId,
    index: r.index,
    policy: r.policy,
    outcome: r.outcome.kind,
    outcome_detail: r.outcome.detail,
    reward: r.reward,
    score: s
      ? {
          terms: s.terms,
          ...(s.gate ? { gate: s.gate } : {}),
          ...(s.tests ? { tests: s.tests } : {}),
          touched_test_files: s.touchedTestFiles,
        }
      : null,
    infra_retries: infraRetryCount(r),
    ...(r.clineTaskId ? { cline_task_id: r.clineTaskId } : {}),
    ...(generationParams ? { generation_params: generationParams } : {}),
  };
}
