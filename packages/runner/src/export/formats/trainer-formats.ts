import { createHash } from "node:crypto";
import { match } from "ts-pattern";
import { z } from "zod";
import { samplingOf } from "../../policy/spec.js";
import type { ServedSegment, ServedTrajectory } from "../../serve/record.js";

/**
 * One mapping per trainer format, from served trajectory records to the records each framework
 * consumes. `flakegym export` writes these; adapters/python/flakegym_<name>.py implement the same
 * mappings on the records `flakegym serve` streams (tests/e2e/serve-adapters.test.ts checks that
 * both agree on one run). Field names were read in each framework's own source (names only, no
 * code), at these commits:
 * - verl volcengine/verl b178a3cd56f58b2d502255daba591e92833930a7,
 *   verl/experimental/agent_loop/agent_loop.py: AgentLoopOutput, AgentLoopMetrics
 * - slime THUDM/slime 624b824a898ab0ec1fcb4d373004c7f3852bf515, slime/utils/types.py: Sample
 *   (rollout_id is an int shared by the samples one rollout was split into; Sample.Status values)
 * - SkyRL NovaSky-AI/SkyRL a9564572eb8e91076be43c1bd5e4615e3de17265, skyrl/train/generators/base.py:
 *   GeneratorOutput, TrajectoryID {instance_id, repetition_id}, is_last_step (step-wise training)
 * - prime-rl PrimeIntellect-ai/prime-rl 559b44772e471d1538537b8805cc77f3824a5e64,
 *   src/prime_rl/transports/rollouts/types.py: TrainingSample (token_ids, mask as booleans,
 *   logprobs, temperatures, env_name)
 * - TRL huggingface/trl f2cd57710ae345ea6428ae95363267fcf38a3dc8, trl/trainer/grpo_trainer.py:
 *   rollout_func's required keys prompt_ids, completion_ids, logprobs; env_mask; other keys are
 *   passed to the reward functions
 * - NeMo Gym NVIDIA-NeMo/Gym 07d6b0d07b22fcf530b4c211dae2ee23100428e4, nemo_gym/openai_utils.py:
 *   TokenIDLogProbMixin (prompt_token_ids, generation_token_ids, generation_log_probs)
 */

export const RecordFormat = z.enum(["verl", "slime", "skyrl", "prime", "trl", "nemo"]);
export type RecordFormat = z.infer<typeof RecordFormat>;

export const SegmentPolicy = z
  .enum(["final", "split"])
  .describe(
    "a trajectory whose context was rewritten has several segments: final = train its last segment with the whole reward; split = one record per segment, reward shared, linked by the trajectory id",
  );
export type SegmentPolicy = z.infer<typeof SegmentPolicy>;

/** One trainable piece: a segment with the reward it carries under the policy. */
export interface Piece {
  readonly record: ServedTrajectory;
  readonly segment: ServedSegment;
  readonly reward: number;
  /** Where the first sampled token is: everything before it is the prompt. */
  readonly promptLength: number;
}

/** The pieces of the records under a segment policy; trajectories without a reward or tokens are left out. Pure. */
export function piecesOf(records: readonly ServedTrajectory[], policy: SegmentPolicy): Piece[] {
  const out: Piece[] = [];
  for (const record of records) {
    if (record.reward === null || record.segments.length === 0) continue;
    const chosen = policy === "final" ? record.segments.slice(-1) : record.segments;
    for (const segment of chosen) {
      const promptLength = segment.loss_mask.indexOf(1);
      if (promptLength < 0) continue;
      const reward =
        policy === "final" ? record.reward : (segment.reward ?? record.reward / record.segments.length);
      out.push({ record, segment, reward, promptLength });
    }
  }
  return out;
}

const response = (p: Piece) => ({
  prompt: p.segment.tokens.slice(0, p.promptLength),
  ids: p.segment.tokens.slice(p.promptLength),
  mask: p.segment.loss_mask.slice(p.promptLength),
  logprobs: p.segment.logprobs ? p.segment.logprobs.slice(p.promptLength) : null,
});

const meta = (p: Piece) => ({
  trajectory_id: p.record.trajectory_id,
  task_id: p.record.task_id,
  run_id: p.record.run_id,
  index: p.record.index,
  segment: p.segment.index,
  segments: p.record.segments.length,
  outcome: p.record.outcome.kind,
});

/**
 * slime's Sample.Status from an outcome kind: a limit or timeout truncated it, a model-server fault
 * failed it (slime: a recoverable failure, partial output kept), other failures aborted it. Pure.
 */
export function slimeStatus(
  kind: ServedTrajectory["outcome"]["kind"],
): "completed" | "truncated" | "failed" | "aborted" {
  if (kind === "completed") return "completed";
  if (kind === "limits_exceeded" || kind === "timeout") return "truncated";
  if (kind === "policy_error") return "failed";
  return "aborted";
}

/**
 * slime's `rollout_id` (an int) of a trajectory: the first 52 bits of sha256(run id, trajectory
 * id), the same in every process and exact in a JSON number; every segment of it shares it. Pure.
 */
export function rolloutIdOf(r: Pick<ServedTrajectory, "run_id" | "trajectory_id">): number {
  return Number.parseInt(
    createHash("sha256").update(`${r.run_id}/${r.trajectory_id}`).digest("hex").slice(0, 13),
    16,
  );
}

/** The sampling temperature a trajectory ran with (its policy spec's), 1 when it names none. Pure. */
export function temperatureOf(r: Pick<ServedTrajectory, "policy">): number {
  try {
    return samplingOf(r.policy)?.temperature ?? 1;
  } catch {
    return 1;
  }
}

/** Each maximal run of trained positions is one model call: its prompt is everything before it. Pure. */
export function callsOf(s: ServedSegment): { start: number; end: number }[] {
  const calls: { start: number; end: number }[] = [];
  for (let i = 0; i < s.loss_mask.length; i++) {
    if (s.loss_mask[i] !== 1) continue;
    const last = calls.at(-1);
    if (last && last.end === i) last.end = i + 1;
    else calls.push({ start: i, end: i + 1 });
  }
  return calls;
}

/** verl: AgentLoopOutput-shaped dicts (one per piece). */
function verl(p: Piece) {
  const r = response(p);
  return {
    prompt_ids: r.prompt,
    response_ids: r.ids,
    response_mask: r.mask,
    response_logprobs: r.logprobs,
    reward_score: p.reward,
    num_turns: p.record.turns,
    metrics: { generate_sequences: p.record.timings_ms.agent / 1000, tool_calls: 0 },
    extra_fields: meta(p),
  };
}

/** slime / miles: Sample-shaped dicts; segments of a trajectory share `rollout_id`. */
function slime(p: Piece) {
  const r = response(p);
  return {
    tokens: p.segment.tokens,
    response_length: r.ids.length,
    loss_mask: r.mask,
    rollout_log_probs: r.logprobs,
    reward: p.reward,
    status: slimeStatus(p.record.outcome.kind),
    metadata: meta(p),
    rollout_id: rolloutIdOf(p.record),
  };
}

/** prime-rl: a TrainingSample, the whole sequence with its boolean mask, logprobs and temperatures. */
function prime(p: Piece) {
  const t = temperatureOf(p.record);
  return {
    token_ids: p.segment.tokens,
    mask: p.segment.loss_mask.map((m) => m === 1),
    logprobs: p.segment.logprobs,
    temperatures: p.segment.tokens.map(() => t),
    env_name: PRIME_ENV_NAME,
    reward: p.reward,
    ...meta(p),
  };
}

/** prime-rl's `env_name` of flakegym's samples. */
export const PRIME_ENV_NAME = "flakegym";

/** TRL: one row of a rollout_func result (env_mask: 1 = sampled by the model, 0 = environment). */
function trl(p: Piece) {
  const r = response(p);
  return {
    prompt_ids: r.prompt,
    completion_ids: r.ids,
    logprobs: r.logprobs,
    env_mask: r.mask,
    reward: p.reward,
    ...meta(p),
  };
}

/** NeMo Gym: per model call, the prompt as sent and the generation with its logprobs. */
function nemo(p: Piece) {
  const lp = p.segment.logprobs;
  return {
    responses: callsOf(p.segment).map((c) => ({
      prompt_token_ids: p.segment.tokens.slice(0, c.start),
      generation_token_ids: p.segment.tokens.slice(c.start, c.end),
      generation_log_probs: lp ? lp.slice(c.start, c.end) : null,
    })),
    reward: p.reward,
    ...meta(p),
  };
}

/** SkyRL: one GeneratorOutput batch per group (task) of pieces. */
function skyrl(pieces: readonly Piece[]) {
  const rows = pieces.map(response);
  return {
    prompt_token_ids: rows.map((r) => r.prompt),
    response_ids: rows.map((r) => r.ids),
    rewards: pieces.map((p) => p.reward),
    loss_masks: rows.map((r) => r.mask),
    rollout_logprobs: rows.every((r) => r.logprobs !== null) ? rows.map((r) => r.logprobs) : null,
    stop_reasons: pieces.map((p) => p.record.outcome.kind),
    // TrajectoryID: the segments of one trajectory share it; is_last_step marks its final one
    trajectory_ids: pieces.map((p) => ({ instance_id: p.record.task_id, repetition_id: p.record.index })),
    is_last_step: pieces.map((p) => p.segment.index === p.record.segments.length - 1),
  };
}

/** The records of a format, in record order (SkyRL: one batch per task, in first-seen order). Pure. */
export function formatRecords(
  format: RecordFormat,
  records: readonly ServedTrajectory[],
  policy: SegmentPolicy,
): unknown[] {
  const pieces = piecesOf(records, policy);
  return match(format)
    .with("verl", () => pieces.map(verl))
    .with("slime", () => pieces.map(slime))
    .with("prime", () => pieces.map(prime))
    .with("trl", () => pieces.map(trl))
    .with("nemo", () => pieces.map(nemo))
    .with("skyrl", () => {
      const byTask = new Map<string, Piece[]>();
      for (const p of pieces) byTask.set(p.record.task_id, [...(byTask.get(p.record.task_id) ?? []), p]);
      return [...byTask.values()].map(skyrl);
    })
    .exhaustive();
}
