import { describe, expect, it } from "vitest";
import { creditOf, groupMeans, noteLine, sampledTokens } from "../../../src/export/formats/credit.js";
import { capPiece } from "../../../src/export/formats/length-cap.js";
import { exportRecords } from "../../../src/export/formats/trainer-formats.js";
import type { ServedSegment, ServedTrajectory } from "../../../src/export/served-record.js";

/**
 * Credit across segments and members, judged with the advantage estimators the frameworks run
 * (written here from verl 0.9.1 core_algos.compute_grpo_outcome_advantage and skyrl 0.4.0
 * trainer.compute_advantages_and_returns; `npm run conformance` runs their own code).
 */

const seg = (index: number, tokens: number[], mask: (0 | 1)[], reward: number | null): ServedSegment => ({
  index,
  tokens,
  loss_mask: mask,
  logprobs: mask.map((m, i) => (m ? -(i + 1) / 10 : 0)),
  reward,
  split: index === 0 ? null : { kind: "prompt_repeated", at_call: 2, position: 0, detail: "truncated" },
  completion_source: "sampled",
});

const rec = (
  id: string,
  index: number,
  reward: number | null,
  segments: ServedSegment[],
): ServedTrajectory => ({
  type: "trajectory",
  run_id: "run",
  trajectory_id: id,
  task_id: "task",
  index,
  policy: "openai:x#m",
  outcome:
    reward === null
      ? { kind: "infra_error", detail: "worker crashed" }
      : segments.length === 0
        ? { kind: "policy_error", detail: "HTTP 500 on the first call" }
        : { kind: "completed", detail: "" },
  reward,
  reward_breakdown: null,
  timings_ms: { snapshot: 0, fork: 1, boot: 2, agent: 3000, score: 4, model: 1200 },
  turns: 3,
  infra_retries: 0,
  segments,
  skipped_calls: [],
  provenance: {},
  prompt: "fix it",
});

// a: one segment, reward 1; b: truncated into two segments (1 + 3 sampled tokens), reward 1;
// c: one segment, reward 0; infra: no reward; turn1: a policy error before any sample
const a = rec("a", 0, 1, [seg(0, [10, 11, 20, 21], [0, 0, 1, 1], 1)]);
const b = rec("b", 1, 1, [
  seg(0, [10, 11, 30], [0, 0, 1], 1),
  seg(1, [10, 12, 31, 32, 13, 33], [0, 0, 1, 1, 0, 1], 1),
]);
const c = rec("c", 2, 0, [seg(0, [10, 11, 40], [0, 0, 1], 0)]);
const infra = rec("infra", 3, null, []);
const turn1 = rec("turn1", 4, 0, []);
const group = [a, b, c, infra, turn1];

/** GRPO as verl and SkyRL compute it: per uid, (score − mean) / (unbiased std + 1e-6); a lone row: mean 0, std 1. */
function grpo(scores: readonly number[], uids: readonly string[]): number[] {
  const by = new Map<string, number[]>();
  scores.forEach((s, i) => {
    by.set(uids[i]!, [...(by.get(uids[i]!) ?? []), s]);
  });
  const stats = new Map(
    [...by].map(([u, xs]) => {
      if (xs.length === 1) return [u, { mean: 0, std: 1 }] as const;
      const mean = xs.reduce((x, y) => x + y, 0) / xs.length;
      const std = Math.sqrt(xs.reduce((x, y) => x + (y - mean) ** 2, 0) / (xs.length - 1));
      return [u, { mean, std }] as const;
    }),
  );
  return scores.map((s, i) => {
    const st = stats.get(uids[i]!)!;
    return (s - st.mean) / (st.std + 1e-6);
  });
}

type SkyBatch = {
  rewards: number[];
  is_last_step: boolean[];
  trajectory_ids: { instance_id: string; repetition_id: number }[];
  loss_masks: number[][];
};

/** SkyRL step-wise: GRPO over each trajectory's last step, broadcast to its steps (cumsum of shifted is_last_step). */
function skyrlStepWise(bt: SkyBatch): number[] {
  const last = bt.is_last_step.flatMap((l, i) => (l ? [i] : []));
  const adv = grpo(
    last.map((i) => bt.rewards[i]!),
    last.map((i) => bt.trajectory_ids[i]!.instance_id),
  );
  let traj = 0;
  return bt.rewards.map((_, i) => {
    const v = adv[traj]!;
    if (bt.is_last_step[i]) traj++;
    return v;
  });
}

const close = (xs: readonly number[]) => xs.map((x) => Math.round(x * 1000) / 1000);

describe("credit across segments", () => {
  it("split trains every sampled token exactly once, each segment with the trajectory's whole reward", () => {
    const { pieces, notes } = creditOf(group, "split");
    expect(pieces.map((p) => [p.record.trajectory_id, p.segment.index, p.reward, p.last])).toEqual([
      ["a", 0, 1, true],
      ["b", 0, 1, false],
      ["b", 1, 1, true],
      ["c", 0, 0, true],
    ]);
    const sampled = group.flatMap((r) => r.segments).reduce((n, s) => n + sampledTokens(s), 0);
    expect(pieces.reduce((n, p) => n + sampledTokens(p.segment), 0)).toBe(sampled);
    expect(notes.map((n) => [n.trajectory_id, n.reason, n.handling])).toEqual([
      ["infra", "no_reward", "left_out"],
      ["turn1", "no_sample", "left_out"],
    ]);
  });

  it("final never drops silently: each earlier segment's sampled tokens are a note", () => {
    const { pieces, notes } = creditOf([a, b], "final");
    expect(pieces.map((p) => [p.record.trajectory_id, p.segment.index])).toEqual([
      ["a", 0],
      ["b", 1],
    ]);
    const dropped = notes.find((n) => n.reason === "earlier_segments")!;
    expect(dropped).toMatchObject({ trajectory_id: "b", sampled_tokens: 1, handling: "left_out" });
    const trained = pieces.reduce((n, p) => n + sampledTokens(p.segment), 0);
    expect(trained + dropped.sampled_tokens).toBe(6);
    expect(noteLine(dropped)).toContain("1 sampled token(s) not trained");
  });

  it("the group baseline counts each sampled trajectory once, without infra or no-sample members", () => {
    expect(groupMeans(group).get("task")).toBeCloseTo(2 / 3, 9);
  });
});

describe("advantages per framework: equal rewards, equal advantages, whatever the segmentation", () => {
  // the same group with b in one segment: the advantages every framework should reproduce
  const ideal = close(grpo([1, 1, 0], ["task", "task", "task"]));

  it("SkyRL step-wise (split): every step of b gets a's advantage; infra and turn1 are out of the baseline", () => {
    const { records, notes } = exportRecords("skyrl", group, "split");
    const bt = records[0] as SkyBatch;
    expect(bt.trajectory_ids.map((t) => t.repetition_id)).toEqual([0, 1, 1, 2]);
    expect(bt.is_last_step).toEqual([true, false, true, true]);
    expect(close(skyrlStepWise(bt))).toEqual([ideal[0], ideal[1], ideal[1], ideal[2]]);
    expect(
      notes.filter((n) => n.reason === "no_reward" || n.reason === "no_sample").map((n) => n.handling),
    ).toEqual(["left_out", "left_out"]);
  });

  it("SkyRL plain (final): one row per member; a placeholder's reward is the sampled members' mean", () => {
    const { records, notes } = exportRecords("skyrl", group, "final");
    const bt = records[0] as SkyBatch & { response_ids: number[][]; prompt_token_ids: number[][] };
    // as many responses as prompts: the group's five members
    expect(bt.response_ids).toHaveLength(5);
    expect(bt.prompt_token_ids).toHaveLength(5);
    expect(bt.loss_masks.slice(3)).toEqual([[0], [0]]);
    const adv = grpo(
      bt.rewards,
      bt.rewards.map(() => "task"),
    );
    // the baseline mean is the sampled members' (a 0.0 placeholder pulled it to 0.4): a and b equal and
    // positive, c negative, the placeholders at the mean (0)
    expect(close(bt.rewards)).toEqual(close([1, 1, 0, 2 / 3, 2 / 3]));
    expect(adv[0]).toBeCloseTo(adv[1]!, 9);
    expect(adv[0]! > 0 && adv[2]! < 0).toBe(true);
    expect(close([adv[3]!, adv[4]!])).toEqual([0, 0]);
    expect(notes.filter((n) => n.handling === "placeholder").map((n) => n.trajectory_id)).toEqual([
      "infra",
      "turn1",
    ]);
    // final leaves b's first segment out, and says so
    expect(notes.find((n) => n.reason === "earlier_segments")).toMatchObject({
      trajectory_id: "b",
      sampled_tokens: 1,
    });
  });

  it("SkyRL step-wise keeps one placeholder when no member sampled anything (the prompt stays in the batch)", () => {
    const { records, notes } = exportRecords("skyrl", [infra, turn1], "split");
    const bt = records[0] as SkyBatch;
    expect(bt.rewards).toEqual([0]);
    expect(bt.loss_masks).toEqual([[0]]);
    expect(notes.map((n) => n.handling)).toEqual(["placeholder", "left_out"]);
  });

  it("verl GRPO (split): b's segments get a's advantage (verl's baseline counts b once per segment: said)", () => {
    const rows = exportRecords("verl", group, "split").records as { reward_score: number }[];
    const adv = grpo(
      rows.map((r) => r.reward_score),
      rows.map(() => "task"),
    );
    expect(rows.map((r) => r.reward_score)).toEqual([1, 1, 1, 0]);
    expect(close(adv.slice(0, 3))).toEqual(close([adv[0]!, adv[0]!, adv[0]!]));
    expect(adv[3]! < 0).toBe(true);
  });

  it("prime-rl: every sampled token of every segment carries its trajectory's advantage", () => {
    const rows = exportRecords("prime", group, "split").records as {
      advantages: number[];
      mask: boolean[];
    }[];
    const perRow = rows.map((r) => [...new Set(r.advantages.filter((_, i) => r.mask[i]))]);
    expect(close(perRow.flat())).toEqual(close([1 / 3, 1 / 3, 1 / 3, -2 / 3]));
  });
});

describe("length caps, as verl's agent loops cut", () => {
  it("keeps the prompt's last N and the response's first M tokens, and counts the sampled tokens cut", () => {
    const p = creditOf([b], "split").pieces[1]!;
    const { piece, note } = capPiece(p, { maxPromptTokens: 1, maxResponseTokens: 2 });
    expect(piece.segment.tokens).toEqual([12, 31, 32]);
    expect(piece.segment.loss_mask).toEqual([0, 1, 1]);
    expect(piece.promptLength).toBe(1);
    expect(note).toMatchObject({ reason: "length_cut", handling: "cut", sampled_tokens: 1 });
    expect(capPiece(p, { maxPromptTokens: 8, maxResponseTokens: 8 }).note).toBeUndefined();
    const rows = exportRecords("verl", [b], "split", { caps: { maxPromptTokens: 1, maxResponseTokens: 2 } });
    const verl = rows.records as { prompt_ids: number[]; response_ids: number[] }[];
    expect(verl.every((r) => r.prompt_ids.length <= 1 && r.response_ids.length <= 2)).toBe(true);
    expect(rows.notes.reduce((n, x) => n + x.sampled_tokens, 0)).toBe(1);
  });
});
