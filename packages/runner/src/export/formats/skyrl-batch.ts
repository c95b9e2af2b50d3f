import type { ServedTrajectory } from "../served-record.js";
import { type ExportNote, memberProblem, type Piece, type SegmentPolicy } from "./credit.js";

/**
 * Which rows a SkyRL batch of one group (task) holds. Read in skyrl 0.4.0 (train/trainer.py,
 * train/utils/trainer_utils.py, dataset/preprocess.py):
 * - plain training (`final`): `validate_generator_output` asserts one response per prompt, and the
 *   GRPO baseline groups rows by the input's uid. A member without a sample is a placeholder row
 *   (loss mask 0) whose reward is the mean of the group's sampled members: the baseline's mean is
 *   the sampled members' (a reward of 0 pulled it down); its std is ×sqrt((m−1)/(n−1)) for m sampled
 *   of n rows, so the advantages are that much larger (a scale, the same for every row of the group).
 * - step-wise training (`split`): rows per trajectory vary, and the advantage is computed from each
 *   trajectory's last step only (broadcast to its earlier steps), so an unsampled member is simply
 *   left out: the baseline counts each sampled trajectory once. A group with no sampled member keeps
 *   one placeholder (reward 0), since its prompt must still be in the batch
 *   (`compute_prompt_mini_batch_boundaries` counts prompts).
 */

/** A row that trains nothing, standing for a member without a sample. */
export interface SkyrlPlaceholder {
  readonly placeholder: true;
  readonly record: ServedTrajectory;
  readonly reward: number;
}

export type SkyrlRow = Piece | SkyrlPlaceholder;

/** The group's rows in member order, and what was done with each member without a sample. Pure. */
export function skyrlRows(
  members: readonly ServedTrajectory[],
  pieces: readonly Piece[],
  policy: SegmentPolicy,
): { rows: SkyrlRow[]; notes: ExportNote[] } {
  const byId = new Map<string, Piece[]>();
  for (const p of pieces) byId.set(p.record.trajectory_id, [...(byId.get(p.record.trajectory_id) ?? []), p]);
  const sampled = members.filter((m) => byId.has(m.trajectory_id));
  const mean = sampled.length ? sampled.reduce((n, m) => n + (m.reward as number), 0) / sampled.length : 0;
  const rows: SkyrlRow[] = [];
  const notes: ExportNote[] = [];
  const ordered = [...members].sort((a, b) => a.index - b.index);
  for (const m of ordered) {
    const own = byId.get(m.trajectory_id);
    if (own) {
      rows.push(...own);
      continue;
    }
    const problem = memberProblem(m) ?? { reason: "no_sample" as const, detail: "no trainable segment" };
    const stepWise = policy === "split";
    const keep = !stepWise || (sampled.length === 0 && !rows.some((r) => "placeholder" in r));
    if (keep) rows.push({ placeholder: true, record: m, reward: stepWise ? 0 : mean });
    notes.push({
      trajectory_id: m.trajectory_id,
      task_id: m.task_id,
      reason: problem.reason,
      sampled_tokens: 0,
      handling: keep ? "placeholder" : "left_out",
      detail: `${problem.detail}; SkyRL: ${
        keep
          ? stepWise
            ? "no member of the group sampled anything: one row (loss mask 0, reward 0) keeps its prompt in the batch"
            : `one response per prompt: loss mask 0, reward ${mean} (the mean of ${sampled.length} sampled member(s)), so the group's baseline mean is theirs`
          : "step-wise advantages come from the sampled trajectories' last steps: the baseline counts them only"
      }`,
    });
  }
  return { rows, notes };
}
