import { createHash } from "node:crypto";
import { match } from "ts-pattern";
import { z } from "zod";
import { samplingOf } from "../../policy/spec.js";
import type { ServedCall, ServedSegment, ServedTrajectory } from "../served-record.js";
import {
  creditOf,
  type ExportNote,
  groupMeans,
  type Piece,
  type SegmentPolicy,
  sampledTokens,
} from "./credit.js";
import { capPieces, type LengthCaps } from "./length-cap.js";
import { type SkyrlRow, skyrlRows } from "./skyrl-batch.js";

/**
 * One mapping per trainer format, from served trajectory records to the records each framework
 * consumes. `flakegym export` writes these; adapters/python/flakegym_<name>.py implement the same
 * mappings on the records `flakegym serve` streams (tests/e2e/serve-adapters.test.ts checks that
 * both agree on one run). Checked against the frameworks' released packages (read, and run by
 * `npm run conformance`):
 * - verl 0.9.1 verl/experimental/agent_loop/agent_loop.py: AgentLoopOutput, AgentLoopMetrics
 *   (generate_sequences and tool_calls are seconds; num_turns counts user, assistant and tool turns)
 * - slime THUDM/slime 624b824a898ab0ec1fcb4d373004c7f3852bf515, slime/utils/types.py: Sample
 *   (rollout_id is an int shared by the samples one rollout was split into; Sample.Status values)
 * - SkyRL 0.4.0 skyrl/train/generators/base.py GeneratorOutput (rollout_metrics read by the
 *   trainer; stop_reasons are finish reasons, "stop" or "length"), TrajectoryID {instance_id,
 *   repetition_id}, is_last_step; skyrl/train/utils/trainer_utils.py validate_generator_output
 * - prime-rl PrimeIntellect-ai/prime-rl a608ad9367b41f952a4151308c46b7d83da1f989,
 *   src/prime_rl/transports/rollouts/types.py: TrainingSample (a msgspec array-like struct: token_ids,
 *   mask as booleans, logprobs, temperatures, env_name, per-token advantages; no other keys)
 * - TRL 1.16.0 trl/trainer/grpo_trainer.py: rollout_func returns prompt_ids, completion_ids, logprobs
 *   (one row per prompt it is given: the sampler has already repeated each prompt num_generations
 *   times); env_mask becomes its tool mask; other keys go to the reward functions
 * - NeMo Gym 0.7.0 nemo_gym/base_resources_server.py BaseVerifyResponse (responses_create_params,
 *   response: a Responses API response whose output items carry prompt_token_ids,
 *   generation_token_ids, generation_log_probs; reward)
 */

export const RecordFormat = z.enum(["verl", "slime", "skyrl", "prime", "trl", "nemo"]);
export type RecordFormat = z.infer<typeof RecordFormat>;

export { type Piece, piecesOf, SegmentPolicy } from "./credit.js";

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

/** The calls of a piece: the record's (text, finish reason, latency) or, for older records, the mask's runs. Pure. */
export function pieceCalls(p: Pick<Piece, "segment">): ServedCall[] {
  return (
    p.segment.calls ??
    callsOf(p.segment).map((c) => ({
      seq: -1,
      start: c.start,
      end: c.end,
      text: "",
      tool_calls: [],
      finish_reason: null,
      latency_ms: 0,
    }))
  );
}

/**
 * verl's num_turns of a piece: its first user turn, each assistant turn and the tool/user turn
 * between two of them (verl's ToolAgentLoop: user_turns + assistant_turns + 1). Pure.
 */
export const verlTurns = (p: Pick<Piece, "segment">): number => Math.max(1, 2 * pieceCalls(p).length);

/** verl: AgentLoopOutput-shaped dicts (one per piece); metrics in seconds, as verl's timers record them. */
function verl(p: Piece) {
  const r = response(p);
  const t = p.record.timings_ms;
  const model = t.model ?? t.agent;
  return {
    prompt_ids: r.prompt,
    response_ids: r.ids,
    response_mask: r.mask,
    response_logprobs: r.logprobs,
    reward_score: p.reward,
    num_turns: verlTurns(p),
    metrics: { generate_sequences: model / 1000, tool_calls: Math.max(0, t.agent - model) / 1000 },
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

/**
 * prime-rl: a TrainingSample (nothing else: the struct takes no other keys): the whole sequence, its
 * boolean mask, logprobs and temperatures per token, and GRPO's advantage — the trajectory's reward
 * minus its group's mean — on every sampled token (0 elsewhere). A piece without logprobs cannot
 * be one and is left out.
 */
function prime(p: Piece, groupMean: number) {
  const t = temperatureOf(p.record);
  const adv = (p.record.reward ?? 0) - groupMean;
  return {
    token_ids: p.segment.tokens,
    mask: p.segment.loss_mask.map((m) => m === 1),
    logprobs: p.segment.logprobs!,
    temperatures: p.segment.tokens.map(() => t),
    env_name: PRIME_ENV_NAME,
    advantages: p.segment.loss_mask.map((m) => (m === 1 ? adv : 0)),
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

/** The model name of a policy spec (`openai:<url>#<model>`), else the spec itself. Pure. */
export const modelOf = (policy: string): string => policy.split("#")[1]?.split("?")[0] || policy;

/**
 * NeMo Gym: a BaseVerifyResponse — the request (`responses_create_params.input`: the task prompt),
 * the Responses API `response` whose `output` holds one assistant message per model call carrying
 * its prompt ids, sampled ids and logprobs (native tool calls follow it as function_call items), and
 * the reward. A piece without logprobs cannot be one and is left out.
 */
function nemo(p: Piece) {
  const lp = p.segment.logprobs!;
  const tokens = p.segment.tokens;
  const output = pieceCalls(p).flatMap((c, i) => [
    {
      id: `msg_${p.record.trajectory_id}_${p.segment.index}_${i}`,
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text: c.text, annotations: [] }],
      prompt_token_ids: tokens.slice(0, c.start),
      generation_token_ids: tokens.slice(c.start, c.end),
      generation_log_probs: lp.slice(c.start, c.end),
    },
    ...c.tool_calls.map((t) => ({
      type: "function_call",
      id: `fc_${t.id}`,
      call_id: t.id,
      name: t.name,
      arguments: t.arguments,
      status: "completed",
    })),
  ]);
  return {
    responses_create_params: {
      input: [{ role: "user", content: p.record.prompt ?? "", type: "message" }],
    },
    response: {
      id: `resp_${p.record.trajectory_id}_${p.segment.index}`,
      object: "response",
      created_at: 0,
      model: modelOf(p.record.policy),
      output,
      parallel_tool_calls: false,
      tool_choice: "auto",
      tools: [],
    },
    reward: p.reward,
    ...meta(p),
  };
}

/** SkyRL's stop reason of a piece: "length" when its last call was cut by the length limit, else "stop". Pure. */
export function skyrlStopReason(p: Pick<Piece, "segment">): "stop" | "length" {
  return pieceCalls(p).at(-1)?.finish_reason === "length" ? "length" : "stop";
}

/** A SkyRL row that trains nothing (loss mask 0), standing for a member without a sample. */
const placeholderRow = () => ({
  prompt: [SKYRL_PAD],
  ids: [SKYRL_PAD],
  mask: [0],
  logprobs: [0],
  stop: "stop" as const,
});

/** The pad id of a SkyRL placeholder row in an export (the Python adapter takes the tokenizer's). */
export const SKYRL_PAD = 0;

/**
 * SkyRL: one GeneratorOutput per group (task): `final` one row per member (plain training), `split`
 * every segment a row, the last with `is_last_step` (step-wise training); members without a sample
 * as skyrl-batch.ts decides. `trajectory_ids` are TrajectoryID fields (a JSON file cannot hold the
 * dataclass: `TrajectoryID(**d)`); `rollout_metrics`, which SkyRL's trainer reads unconditionally,
 * holds the group's own metrics.
 */
function skyrl(rows: readonly SkyrlRow[], records: readonly ServedTrajectory[]) {
  const r = rows.map((x) =>
    "placeholder" in x ? placeholderRow() : { ...response(x), stop: skyrlStopReason(x) },
  );
  const rewards = records.flatMap((x) => (x.reward === null ? [] : [x.reward]));
  return {
    prompt_token_ids: r.map((x) => x.prompt),
    response_ids: r.map((x) => x.ids),
    rewards: rows.map((x) => x.reward),
    loss_masks: r.map((x) => x.mask),
    rollout_logprobs: r.every((x) => x.logprobs !== null) ? r.map((x) => x.logprobs) : null,
    stop_reasons: r.map((x) => x.stop),
    rollout_metrics: {
      "flakegym/trajectories": records.length,
      "flakegym/rows": rows.length,
      "flakegym/mean_reward": rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : 0,
    },
    // TrajectoryID: the segments of one trajectory share it; is_last_step marks its final one
    trajectory_ids: rows.map((x) => ({ instance_id: x.record.task_id, repetition_id: x.record.index })),
    is_last_step: rows.map((x) => ("placeholder" in x ? true : x.last)),
  };
}

/** SkyRL's batches, one per task in first-seen order, and what each did with its odd members. Pure. */
function skyrlExport(pieces: readonly Piece[], records: readonly ServedTrajectory[], policy: SegmentPolicy) {
  const tasks = [...new Set(records.map((r) => r.task_id))];
  const notes: ExportNote[] = [];
  const batches = tasks.map((task) => {
    const members = records.filter((r) => r.task_id === task);
    const planned = skyrlRows(
      members,
      pieces.filter((p) => p.record.task_id === task),
      policy,
    );
    notes.push(...planned.notes);
    return skyrl(planned.rows, members);
  });
  return { records: batches, notes };
}

/** The options of an export's records beyond the format. */
export interface ExportRecordsOptions {
  readonly caps?: LengthCaps;
}

/**
 * The records of a format, in record order (SkyRL: one batch per task, in first-seen order), and
 * a note for every member or sampled token they do not train as it is (left out, a placeholder,
 * cut), with why. Pure.
 */
export function exportRecords(
  format: RecordFormat,
  records: readonly ServedTrajectory[],
  policy: SegmentPolicy,
  o: ExportRecordsOptions = {},
): { records: unknown[]; notes: ExportNote[] } {
  const credit = creditOf(records, policy);
  const capped = capPieces(credit.pieces, o.caps ?? {});
  const pieces = capped.pieces;
  const base = [...credit.notes, ...capped.notes];
  const withLogprobs = pieces.filter((p) => p.segment.logprobs !== null);
  const noLogprobs = pieces
    .filter((p) => p.segment.logprobs === null)
    .map(
      (p): ExportNote => ({
        trajectory_id: p.record.trajectory_id,
        task_id: p.record.task_id,
        reason: "no_logprobs",
        sampled_tokens: sampledTokens(p.segment),
        handling: "left_out",
        detail: `segment ${p.segment.index}: the inference server gave no logprobs, and ${format} records need them`,
      }),
    );
  const means = groupMeans(records);
  return match(format)
    .with("verl", () => ({ records: pieces.map(verl), notes: base }))
    .with("slime", () => ({ records: pieces.map(slime), notes: base }))
    .with("prime", () => ({
      records: withLogprobs.map((p) => prime(p, means.get(p.record.task_id) ?? 0)),
      notes: [...base, ...noLogprobs],
    }))
    .with("trl", () => ({ records: pieces.map(trl), notes: base }))
    .with("nemo", () => ({ records: withLogprobs.map(nemo), notes: [...base, ...noLogprobs] }))
    .with("skyrl", () => {
      const s = skyrlExport(pieces, records, policy);
      // SkyRL represents (or leaves out) members without a sample itself: its notes replace credit's
      const members = new Set(s.notes.map((n) => n.trajectory_id));
      const rest = base.filter(
        (n) =>
          !(members.has(n.trajectory_id) && n.reason !== "earlier_segments" && n.reason !== "length_cut"),
      );
      return { records: s.records, notes: [...rest, ...s.notes] };
    })
    .exhaustive();
}

/** The records of a format (see {@link exportRecords}). Pure. */
export const formatRecords = (
  format: RecordFormat,
  records: readonly ServedTrajectory[],
  policy: SegmentPolicy,
  o: ExportRecordsOptions = {},
): unknown[] => exportRecords(format, records, policy, o).records;
