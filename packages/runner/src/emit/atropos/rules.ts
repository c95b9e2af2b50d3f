import type { ScoredDataGroup } from "../../run-format/atropos-schema.js";

/**
 * The env-side rules an Atropos environment applies before sending a group
 * (`BaseEnv.handle_send_to_api` and the back-pressure test in `BaseEnv.env_manager`). Pure.
 */

export interface GroupRules {
  /** The group size registered with the run-api. */
  readonly groupSize: number;
  /** Drop a group whose scores are all equal (Atropos `ensure_scores_are_not_same`, default true). */
  readonly dropEqualScores: boolean;
  /** The trainer's max token length (`/info` max_token_len); <= 0 disables the check. */
  readonly maxTokenLen: number;
}

/** Why a group is not sent; the group stays in groups.jsonl either way. */
export type DropReason = "group_size" | "equal_scores" | "too_long" | "no_tokens";

export type GroupVerdict =
  | { readonly send: true }
  | { readonly send: false; readonly reason: DropReason; readonly detail: string };

/** The members a group left out, as a clause of a drop's detail ("" when none). Pure. */
export function leftOutOf(group: Pick<ScoredDataGroup, "group_overrides">): string {
  const ex = group.group_overrides?.["excluded"];
  if (!Array.isArray(ex) || ex.length === 0) return "";
  const parts = ex.map(
    (x: { trajectory_id?: unknown; reason?: unknown; detail?: unknown }) =>
      `${String(x.trajectory_id)} (${String(x.reason)}: ${String(x.detail)})`,
  );
  return `; left out: ${parts.join("; ")}`;
}

/** Decides whether a group may be sent, applying Atropos's checks in Atropos's order. */
export function checkGroup(group: ScoredDataGroup, rules: GroupRules): GroupVerdict {
  if (group.tokens.length === 0 || group.tokens.some((t) => t.length === 0)) {
    return {
      send: false,
      reason: "no_tokens",
      detail: "the group has no token data (run with --tokenizer <dir> to produce tokens for a trainer)",
    };
  }
  if (group.tokens.length !== rules.groupSize) {
    return {
      send: false,
      reason: "group_size",
      detail: `the group has ${group.tokens.length} sequences, the run-api expects ${rules.groupSize} (it would buffer the group forever)${leftOutOf(group)}`,
    };
  }
  if (rules.dropEqualScores && new Set(group.scores).size === 1) {
    return {
      send: false,
      reason: "equal_scores",
      detail: `all ${group.scores.length} scores are ${group.scores[0]} (no learning signal; --keep-equal-scores sends it anyway)`,
    };
  }
  if (rules.maxTokenLen > 0) {
    const longest = Math.max(...group.tokens.map((t) => t.length));
    if (longest >= rules.maxTokenLen) {
      return {
        send: false,
        reason: "too_long",
        detail: `a sequence has ${longest} tokens, the trainer's max_token_len is ${rules.maxTokenLen}`,
      };
    }
  }
  return { send: true };
}

/**
 * Why a group must not be sent to a trainer with this batch size, or undefined when it may be: a
 * trainer fills a batch with whole groups and never takes one larger than the batch, so such a
 * group would sit in the run-api's queue forever. `batchSize` <= 0 (unknown) passes. Pure.
 */
export function batchSizeProblem(sequences: number, batchSize: number): string | undefined {
  if (batchSize <= 0 || sequences <= batchSize) return undefined;
  return (
    `the group has ${sequences} sequences but the trainer's batch_size is ${batchSize}, and a trainer never ` +
    `takes a group larger than its batch: not sent (it stays pending); lower --group-size to at most ` +
    `${batchSize} or raise the trainer's batch size, then --resume`
  );
}

/**
 * Whether status-env shows a run-api that restarted since the last look: its step went back.
 * (A restarted API also forgets every env id; one it does not know answers status-env with 500.)
 * Pure.
 */
export function apiRestarted(lastStep: number | undefined, currentStep: number): boolean {
  return lastStep !== undefined && currentStep < lastStep;
}

export interface BackPressure {
  readonly groupSize: number;
  /** The trainer's batch size (`/info`); -1 (unknown) pauses, as in Atropos. */
  readonly batchSize: number;
  /** How many batches may wait in the queue ahead of the trainer; <= 0 disables the limit. */
  readonly maxBatchesOffpolicy: number;
}

/** True while the run-api's queue is full for this env: `queue_size*group_size >= max_off*batch`. */
export function shouldPause(queueSize: number, bp: BackPressure): boolean {
  if (bp.batchSize === -1) return true;
  if (bp.maxBatchesOffpolicy <= 0) return false;
  return queueSize * bp.groupSize >= bp.maxBatchesOffpolicy * bp.batchSize;
}
