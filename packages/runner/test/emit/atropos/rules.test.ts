import { describe, expect, it } from "vitest";
import { apiRestarted, batchSizeProblem, checkGroup, shouldPause } from "../../../src/emit/atropos/rules.js";
import type { ScoredDataGroup } from "../../../src/run-format/atropos-schema.js";

const group = (scores: number[], len = 5): ScoredDataGroup => ({
  tokens: scores.map(() => Array.from({ length: len }, (_, i) => i + 1)),
  masks: scores.map(() => Array.from({ length: len }, (_, i) => (i < 2 ? -100 : i + 1))),
  scores,
});

describe("checkGroup (Atropos handle_send_to_api rules)", () => {
  const rules = { groupSize: 3, dropEqualScores: true, maxTokenLen: 10 };

  it("sends a well-formed group with distinct scores", () => {
    expect(checkGroup(group([1, 0, 0.5]), rules)).toEqual({ send: true });
  });

  it("drops a group whose size differs from the registered group size", () => {
    const v = checkGroup(group([1, 0]), rules);
    expect(v).toMatchObject({ send: false, reason: "group_size" });
    if (!v.send) expect(v.detail).toContain("2 sequences, the run-api expects 3");
  });

  it("drops all-equal scores unless configured to keep them", () => {
    expect(checkGroup(group([1, 1, 1]), rules)).toMatchObject({ send: false, reason: "equal_scores" });
    expect(checkGroup(group([1, 1, 1]), { ...rules, dropEqualScores: false })).toEqual({ send: true });
  });

  it("drops a group with any sequence at or above max_token_len; <= 0 disables the check", () => {
    expect(checkGroup(group([1, 0, 0], 10), rules)).toMatchObject({ send: false, reason: "too_long" });
    expect(checkGroup(group([1, 0, 0], 9), rules)).toEqual({ send: true });
    expect(checkGroup(group([1, 0, 0], 50), { ...rules, maxTokenLen: -1 })).toEqual({ send: true });
  });

  it("refuses a group without token data", () => {
    expect(checkGroup({ tokens: [[], [], []], masks: [[], [], []], scores: [1, 0, 0] }, rules)).toMatchObject(
      {
        send: false,
        reason: "no_tokens",
      },
    );
  });
});

describe("shouldPause (Atropos env_manager back-pressure)", () => {
  it("pauses when queue_size*group_size >= max_batches_offpolicy*batch_size", () => {
    const bp = { groupSize: 4, batchSize: 8, maxBatchesOffpolicy: 3 };
    expect(shouldPause(5, bp)).toBe(false); // 20 < 24
    expect(shouldPause(6, bp)).toBe(true); // 24 >= 24
  });
  it("pauses while the batch size is unknown (-1) and never pauses with the limit off", () => {
    expect(shouldPause(0, { groupSize: 2, batchSize: -1, maxBatchesOffpolicy: 3 })).toBe(true);
    expect(shouldPause(999, { groupSize: 2, batchSize: 8, maxBatchesOffpolicy: 0 })).toBe(false);
  });
});

describe("batchSizeProblem / apiRestarted", () => {
  it("refuses a group with more sequences than the trainer's batch; unknown batch sizes pass", () => {
    expect(batchSizeProblem(8, 4)).toMatch(
      /8 sequences but the trainer's batch_size is 4.*--group-size to at most 4/,
    );
    expect(batchSizeProblem(4, 4)).toBeUndefined();
    expect(batchSizeProblem(8, -1)).toBeUndefined();
  });
  it("sees a restart when the step goes back, not before the first look", () => {
    expect(apiRestarted(undefined, 0)).toBe(false);
    expect(apiRestarted(3, 3)).toBe(false);
    expect(apiRestarted(3, 4)).toBe(false);
    expect(apiRestarted(3, 0)).toBe(true);
  });
});
