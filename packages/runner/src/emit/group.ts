import { type SamplingParams, trajectorySampling } from "../policy/sampling.js";
import { samplingOf } from "../policy/spec.js";
import { type AtroposMessage, MASKED, ScoredDataGroup } from "../run-format/atropos-schema.js";
import { GroupLine, type TrajectoryResult } from "../run-format/schema.js";
import { atroposOverrideOf } from "../run-format/trajectory-record.js";

/**
 * One token sequence of a trajectory from the trainer export. A trajectory is one sequence unless
 * its context was rewritten mid-way (condensed history, a template that rewrites past turns); then
 * it is several segments sharing its id, each carrying its whole reward.
 */
export interface TokenSequence {
  readonly tokens: readonly number[];
  readonly masks: readonly number[];
  /** Null when the upstream gave no logprobs for some trained token. */
  readonly inferenceLogprobs: readonly number[] | null;
  /** This sequence's score: the trajectory's reward (every segment carries it whole). */
  readonly reward: number;
  /** The chat this sequence renders, when it differs from the trajectory's full chat. */
  readonly messages?: readonly AtroposMessage[];
  /** Which export segment this is, when the trajectory had several (why it split, what was left out). */
  readonly segment?: {
    readonly index: number;
    readonly of: number;
    readonly split?: string;
    /** Sampled tokens of the trajectory's earlier segments this group does not train (`--segments last`). */
    readonly untrainedSampledTokens?: number;
  };
}

export interface GroupMember {
  readonly result: TrajectoryResult;
  /** The trajectory's chat (system prompt, user turns, assistant turns) as the policy saw it. */
  readonly messages: readonly AtroposMessage[];
  /** Present when the run has a tokenizer: one or more token sequences (segments). */
  readonly sequences?: readonly TokenSequence[];
  /** Why the trajectory's token export could not be built (it is then left out of a token group). */
  readonly exportError?: string;
}

/** A trajectory left out of its group, and why. */
export interface ExcludedMember {
  readonly trajectory_id: string;
  readonly outcome: string;
  readonly detail: string;
  /**
   * infra_error: no reward after every retry; export_failed: its token export could not be built;
   * no_sample: the policy sampled no token (a model-server error on the first call).
   */
  readonly reason: "infra_error" | "export_failed" | "no_sample";
}

/**
 * Which members a group keeps, in index order. Pure. A trajectory without a reward (infra_error
 * after every retry) is left out; so, when the group carries tokens, is one whose token export failed
 * and one in which the policy sampled no token (a first-call error: a 0-token sequence would make
 * the Atropos sender drop the group and the run-api park it forever). One odd trajectory never costs
 * the others; the sender holds back a group left smaller than its size, naming these members.
 */
export function partitionMembers(
  members: readonly GroupMember[],
  withTokens: boolean,
): { kept: GroupMember[]; excluded: ExcludedMember[] } {
  const sorted = [...members].sort((a, b) => a.result.index - b.result.index);
  const kept: GroupMember[] = [];
  const excluded: ExcludedMember[] = [];
  for (const m of sorted) {
    const r = m.result;
    if (r.reward === null)
      excluded.push({
        trajectory_id: r.trajectoryId,
        outcome: r.outcome.kind,
        detail: r.outcome.detail,
        reason: "infra_error",
      });
    else if (withTokens && m.exportError !== undefined)
      excluded.push({
        trajectory_id: r.trajectoryId,
        outcome: r.outcome.kind,
        detail: `token export failed: ${m.exportError}`,
        reason: "export_failed",
      });
    else if (withTokens && !sampledAny(m))
      excluded.push({
        trajectory_id: r.trajectoryId,
        outcome: r.outcome.kind,
        detail: `the policy sampled no token (${r.outcome.detail || r.outcome.kind}): no sequence to train`,
        reason: "no_sample",
      });
    else kept.push(m);
  }
  return { kept, excluded };
}

/** Whether a member's token sequences hold a sampled (trained) token. Pure. */
const sampledAny = (m: GroupMember): boolean =>
  (m.sequences ?? []).some((q) => q.masks.some((x) => x !== MASKED));

export interface GroupContext {
  readonly runId: string;
  readonly taskId: string;
  /** Facts that make the group reproducible (snapshot key, row id, versions, seed, …). */
  readonly provenance: Readonly<Record<string, unknown>>;
  /** Whether token fields are expected (a tokenizer was given). */
  readonly withTokens: boolean;
}

/** The sampling parameters a trajectory was sent with (its policy's, seed moved by its index). Pure. */
export function samplingOfResult(r: Pick<TrajectoryResult, "policy" | "index">): SamplingParams | undefined {
  let p: SamplingParams | undefined;
  try {
    p = samplingOf(r.policy);
  } catch {
    return undefined; // not a spec this version parses: nothing to record
  }
  return p ? trajectorySampling(p, r.index) : undefined;
}

/**
 * The group's `generation_params`: its policies' sampling parameters when every trajectory shares
 * one policy's (seed: the policy's base seed), else none — a mixed group records each trajectory's
 * in `overrides[i].generation_params`. Pure.
 */
function groupGenerationParams(results: readonly TrajectoryResult[]): SamplingParams | undefined {
  const all = results.map((r) => {
    try {
      return JSON.stringify(samplingOf(r.policy) ?? null);
    } catch {
      return "null";
    }
  });
  if (all.length === 0 || all[0] === "null" || all.some((x) => x !== all[0])) return undefined;
  return JSON.parse(all[0]!) as SamplingParams;
}

/** The id of a task's group in a run (`group_overrides.group_id`). */
export const groupId = (runId: string, taskId: string) => `${runId}:${taskId}`;

/**
 * Builds a task's group from its finished trajectories. Pure. Trajectories that ended in
 * `infra_error` after every retry, and (with tokens) those whose token export failed, are left out
 * (listed with their reason in `group_overrides.excluded`), so the group can be smaller than the
 * group size.
 */
export function buildGroup(ctx: GroupContext, members: readonly GroupMember[]): GroupLine {
  const { kept, excluded } = partitionMembers(members, ctx.withTokens);
  const scores: number[] = [];
  const messages: AtroposMessage[][] = [];
  const overrides: Record<string, unknown>[] = [];
  const tokens: number[][] = [];
  const masks: number[][] = [];
  const logprobs: (readonly number[] | null)[] = [];
  for (const m of kept) {
    const r = m.result;
    const base = atroposOverrideOf(r, samplingOfResult(r));
    // without a tokenizer: one entry per trajectory; with one: one entry per exported sequence
    const seqs: (TokenSequence | undefined)[] = ctx.withTokens
      ? m.sequences && m.sequences.length > 0
        ? [...m.sequences]
        : [undefined]
      : [undefined];
    seqs.forEach((q, i) => {
      scores.push(q ? q.reward : (r.reward as number));
      messages.push([...(q?.messages ?? m.messages)]);
      overrides.push(
        q?.segment
          ? {
              ...base,
              segment: q.segment.index,
              segments: q.segment.of,
              ...(q.segment.split ? { split: q.segment.split } : {}),
              ...(q.segment.untrainedSampledTokens
                ? { untrained_sampled_tokens: q.segment.untrainedSampledTokens }
                : {}),
            }
          : seqs.length > 1
            ? { ...base, segment: i, segments: seqs.length }
            : base,
      );
      if (ctx.withTokens) {
        tokens.push([...(q?.tokens ?? [])]);
        masks.push([...(q?.masks ?? [])]);
        logprobs.push(q ? q.inferenceLogprobs : []);
      }
    });
  }
  const line: GroupLine = {
    scores,
    messages,
    overrides,
    group_overrides: {
      group_id: groupId(ctx.runId, ctx.taskId),
      task_id: ctx.taskId,
      run_id: ctx.runId,
      trajectories: kept.length,
      excluded,
      provenance: ctx.provenance,
    },
  };
  const generation = groupGenerationParams(kept.map((m) => m.result));
  if (generation) line.generation_params = generation;
  if (ctx.withTokens) {
    line.tokens = tokens;
    line.masks = masks;
    // Atropos takes inference_logprobs for the whole group or not at all; a mixed group (a policy
    // without logprobs beside one with) keeps each sequence's own in its overrides
    if (logprobs.every((l) => l !== null && l.length > 0))
      line.inference_logprobs = logprobs.map((l) => [...l!]);
    else
      logprobs.forEach((l, i) => {
        if (l && l.length > 0) overrides[i] = { ...overrides[i], inference_logprobs: [...l] };
      });
  }
  return GroupLine.parse(line);
}

/** The group as the run-api takes it; undefined when it has no token fields. */
export function toScoredDataGroup(line: GroupLine): ScoredDataGroup | undefined {
  if (!line.tokens || !line.masks) return undefined;
  return ScoredDataGroup.parse({ ...line, tokens: line.tokens, masks: line.masks });
}
