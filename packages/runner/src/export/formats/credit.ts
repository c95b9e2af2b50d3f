import { z } from "zod";
import type { ServedSegment, ServedTrajectory } from "../served-record.js";

/**
 * Credit across context segments, decided once for every trainer format.
 *
 * A trajectory whose context Cline condensed or truncated is several sampled segments, each its own
 * token sequence (its own prompt). Every segment is a piece carrying the trajectory's whole reward:
 * an outcome reward belongs to the trajectory, and a segment of a reward-1 trajectory must get the
 * advantage a one-segment reward-1 trajectory gets. How the group baseline counts the trajectory
 * once is each framework's (trainer-formats.ts, docs/reference/trainers.md). `split` (default) trains every
 * sampled token exactly once; `final` trains the last segment only and reports each earlier one.
 */

export const SegmentPolicy = z
  .enum(["split", "final"])
  .describe(
    "a trajectory whose context was rewritten has several segments: split (default) = one record per segment, each carrying the trajectory's whole reward, linked by the trajectory id (every sampled token trained once); final = its last segment only (the earlier segments' sampled tokens are left out and reported)",
  );
export type SegmentPolicy = z.infer<typeof SegmentPolicy>;

/** One trainable piece: a segment with the reward it carries. */
export interface Piece {
  readonly record: ServedTrajectory;
  readonly segment: ServedSegment;
  /** The trajectory's reward (every segment carries the whole outcome). */
  readonly reward: number;
  /** Where the first sampled token is: everything before it is the prompt. */
  readonly promptLength: number;
  /** Whether this is the trajectory's last trained segment. */
  readonly last: boolean;
}

/** Why something sampled (or a member) is not trained as it is. */
export type NoteReason =
  | "no_reward"
  | "no_sample"
  | "export_failed"
  | "earlier_segments"
  | "no_logprobs"
  | "length_cut";

/** What an export did with a member or with sampled tokens it does not train; printed by every export. */
export interface ExportNote {
  readonly trajectory_id: string;
  readonly task_id: string;
  readonly reason: NoteReason;
  /** Sampled tokens not trained because of it. */
  readonly sampled_tokens: number;
  /** left_out: no record; placeholder: a row that trains nothing; cut: a record with fewer tokens. */
  readonly handling: "left_out" | "placeholder" | "cut";
  readonly detail: string;
}

/** How many tokens of a segment the policy sampled. Pure. */
export const sampledTokens = (s: Pick<ServedSegment, "loss_mask">): number =>
  s.loss_mask.reduce<number>((n, m) => n + m, 0);

/** Whether a trajectory has a reward and at least one sampled token (else it is no trainable member). Pure. */
export const hasSample = (r: ServedTrajectory): boolean =>
  r.reward !== null && r.segments.some((s) => sampledTokens(s) > 0);

/** Why a record is no trainable member (undefined when it is one). Pure. */
export function memberProblem(r: ServedTrajectory): { reason: NoteReason; detail: string } | undefined {
  if (r.reward === null)
    return {
      reason: "no_reward",
      detail: `${r.outcome.kind}: no reward after every retry (${r.outcome.detail || "no detail"})`,
    };
  if (!hasSample(r))
    return {
      reason: "no_sample",
      detail: `${r.outcome.kind} before the policy sampled a token (${r.outcome.detail || "no detail"})`,
    };
  return undefined;
}

const note = (
  r: ServedTrajectory,
  reason: NoteReason,
  handling: ExportNote["handling"],
  sampled: number,
  detail: string,
): ExportNote => ({
  trajectory_id: r.trajectory_id,
  task_id: r.task_id,
  reason,
  sampled_tokens: sampled,
  handling,
  detail,
});

/**
 * The pieces of the records under a segment policy, and a note for every member that has none
 * (`left_out`: a format that represents such members replaces the note) and for every earlier
 * segment `final` does not train. Pure.
 */
export function creditOf(
  records: readonly ServedTrajectory[],
  policy: SegmentPolicy,
): { pieces: Piece[]; notes: ExportNote[] } {
  const pieces: Piece[] = [];
  const notes: ExportNote[] = [];
  for (const record of records) {
    const problem = memberProblem(record);
    if (problem) {
      notes.push(note(record, problem.reason, "left_out", 0, problem.detail));
      continue;
    }
    const sampled = record.segments.filter((s) => sampledTokens(s) > 0);
    const chosen = policy === "final" ? sampled.slice(-1) : sampled;
    const dropped = sampled.slice(0, sampled.length - chosen.length);
    if (dropped.length > 0) {
      const n = dropped.reduce((k, s) => k + sampledTokens(s), 0);
      notes.push(
        note(
          record,
          "earlier_segments",
          "left_out",
          n,
          `--segments final trains its last segment only: ${dropped.length} earlier segment(s) with ${n} sampled token(s) not trained (--segments split trains them)`,
        ),
      );
    }
    for (const [i, segment] of chosen.entries())
      pieces.push({
        record,
        segment,
        reward: record.reward as number,
        promptLength: segment.loss_mask.indexOf(1),
        last: i === chosen.length - 1,
      });
  }
  return { pieces, notes };
}

/** The pieces of the records under a segment policy (see {@link creditOf}). Pure. */
export const piecesOf = (records: readonly ServedTrajectory[], policy: SegmentPolicy): Piece[] =>
  creditOf(records, policy).pieces;

/**
 * Each group's (task's) mean reward over its members that sampled something: GRPO's baseline,
 * each trajectory counted once whatever its segments, members without a sample left out. Pure.
 */
export function groupMeans(records: readonly ServedTrajectory[]): Map<string, number> {
  const sums = new Map<string, { n: number; sum: number }>();
  for (const r of records) {
    if (!hasSample(r)) continue;
    const g = sums.get(r.task_id) ?? { n: 0, sum: 0 };
    sums.set(r.task_id, { n: g.n + 1, sum: g.sum + (r.reward as number) });
  }
  return new Map([...sums].map(([k, g]) => [k, g.sum / g.n]));
}

/** One line of an export's report: what it did with a member or tokens, and why. Pure. */
export function noteLine(n: ExportNote): string {
  const what =
    n.handling === "left_out"
      ? "left out"
      : n.handling === "placeholder"
        ? "a placeholder row (trains nothing)"
        : "cut";
  const tokens = n.sampled_tokens > 0 ? `, ${n.sampled_tokens} sampled token(s) not trained` : "";
  return `${n.trajectory_id} (${n.task_id}): ${what} [${n.reason}${tokens}]: ${n.detail}`;
}
