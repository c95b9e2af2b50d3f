import { describe, expect, it } from "vitest";
import { checkGroup } from "../../src/emit/atropos/rules.js";
import { buildGroup, groupId, partitionMembers, toScoredDataGroup } from "../../src/emit/group.js";
import { result } from "../rollout/fixtures.js";

const chat = (text: string) => [
  { role: "system", content: "you are cline" },
  { role: "user", content: "fix it" },
  { role: "assistant", content: text },
];
const ctx = { runId: "run1", taskId: "a", provenance: { snapshot_key: "k1", seed: 0 }, withTokens: false };

describe("buildGroup", () => {
  it("without a tokenizer: scores, messages and overrides per trajectory, no token fields", () => {
    const line = buildGroup(ctx, [
      { result: result({ taskId: "a", index: 1, reward: 0 }), messages: chat("b") },
      { result: result({ taskId: "a", index: 0, reward: 1 }), messages: chat("a") },
    ]);
    expect(line.tokens).toBeUndefined();
    expect(line.masks).toBeUndefined();
    expect(line.scores).toEqual([1, 0]);
    expect(line.messages!.map((m) => m.at(-1)!.content)).toEqual(["a", "b"]);
    expect(line.overrides![0]).toMatchObject({
      trajectory_id: "a-t0",
      outcome: "completed",
      reward: 1,
      policy: "gold",
    });
    expect(line.overrides![0]!.score).toMatchObject({
      terms: [{ name: "tests", value: 1 }],
      touched_test_files: [],
    });
    expect(line.group_overrides).toMatchObject({
      group_id: "run1:a",
      task_id: "a",
      provenance: { snapshot_key: "k1" },
    });
    expect(toScoredDataGroup(line)).toBeUndefined();
  });

  it("leaves infra failures out and lists them", () => {
    const line = buildGroup(ctx, [
      { result: result({ taskId: "a", index: 0, reward: 1 }), messages: chat("a") },
      { result: result({ taskId: "a", index: 1, reward: null }), messages: [] },
    ]);
    expect(line.scores).toEqual([1]);
    expect(line.group_overrides!.excluded).toEqual([
      { trajectory_id: "a-t1", outcome: "infra_error", detail: "worker crashed", reason: "infra_error" },
    ]);
  });

  it("with tokens: a trajectory whose token export failed is left out with its reason, the rest kept", () => {
    const seq = (id: number) => ({
      tokens: [1, id],
      masks: [-100, id],
      inferenceLogprobs: [1, -0.5],
      reward: 1,
    });
    const members = [
      { result: result({ taskId: "a", index: 0, reward: 1 }), messages: chat("a"), sequences: [seq(5)] },
      {
        result: result({ taskId: "a", index: 1, reward: 1 }),
        messages: [],
        exportError: "token_ids must be a non-empty array of integers",
      },
      { result: result({ taskId: "a", index: 2, reward: 0 }), messages: chat("c"), sequences: [seq(7)] },
    ];
    const line = buildGroup({ ...ctx, withTokens: true }, members);
    expect(line.scores).toEqual([1, 1]);
    expect(line.tokens).toEqual([
      [1, 5],
      [1, 7],
    ]);
    expect(line.group_overrides).toMatchObject({ trajectories: 2 });
    expect(line.group_overrides!.excluded).toEqual([
      {
        trajectory_id: "a-t1",
        outcome: "completed",
        detail: "token export failed: token_ids must be a non-empty array of integers",
        reason: "export_failed",
      },
    ]);
    // without tokens the same member has nothing missing: it stays
    expect(partitionMembers(members, false).kept).toHaveLength(3);
  });

  it("with tokens: a member that sampled no token (a first-call error) is left out, never a 0-token sequence", () => {
    const seq = (id: number) => ({
      tokens: [1, id],
      masks: [-100, id],
      inferenceLogprobs: [1, -0.5],
      reward: 1,
    });
    const turn1 = result({ taskId: "a", index: 1, reward: 0 });
    const members = [
      { result: result({ taskId: "a", index: 0, reward: 1 }), messages: chat("a"), sequences: [seq(5)] },
      // what a policy_error on the first call exports: nothing sampled (no sequence, or only a prompt)
      { result: turn1, messages: [], sequences: [] },
      {
        result: result({ taskId: "a", index: 2, reward: 0 }),
        messages: [],
        sequences: [{ tokens: [1, 2], masks: [-100, -100], inferenceLogprobs: null, reward: 0 }],
      },
      { result: result({ taskId: "a", index: 3, reward: 0 }), messages: chat("d"), sequences: [seq(7)] },
    ];
    const line = buildGroup({ ...ctx, withTokens: true }, members);
    expect(line.tokens).toEqual([
      [1, 5],
      [1, 7],
    ]);
    expect(line.tokens!.every((t) => t.length > 0)).toBe(true);
    expect(line.group_overrides!.excluded).toMatchObject([
      { trajectory_id: "a-t1", reason: "no_sample" },
      { trajectory_id: "a-t2", reason: "no_sample" },
    ]);
    // the sender holds the smaller group back, naming who was left out and why (not "no_tokens")
    const verdict = checkGroup(toScoredDataGroup(line)!, {
      groupSize: 4,
      dropEqualScores: true,
      maxTokenLen: 0,
    });
    expect(verdict).toMatchObject({ send: false, reason: "group_size" });
    expect(verdict.send === false && verdict.detail).toContain("a-t1 (no_sample");
  });

  it("with a tokenizer: token fields per sequence, segments share the trajectory id", () => {
    const seq = (n: number, reward: number) => ({
      tokens: [1, 2, 3, n],
      masks: [-100, -100, 3, n],
      inferenceLogprobs: [1, 1, -0.5, -0.25],
      reward,
    });
    const line = buildGroup({ ...ctx, withTokens: true }, [
      {
        result: result({ taskId: "a", index: 0, reward: 1 }),
        messages: chat("a"),
        sequences: [seq(4, 0.5), seq(5, 0.5)],
      },
      { result: result({ taskId: "a", index: 1, reward: 0 }), messages: chat("b"), sequences: [seq(6, 0)] },
    ]);
    expect(line.tokens).toEqual([
      [1, 2, 3, 4],
      [1, 2, 3, 5],
      [1, 2, 3, 6],
    ]);
    expect(line.scores).toEqual([0.5, 0.5, 0]);
    expect(line.inference_logprobs).toHaveLength(3);
    expect(line.overrides!.map((o) => [o.trajectory_id, o.segment])).toEqual([
      ["a-t0", 0],
      ["a-t0", 1],
      ["a-t1", undefined],
    ]);
    const sdg = toScoredDataGroup(line)!;
    expect(sdg.masks[0]).toEqual([-100, -100, 3, 4]);
    // three sequences for a group of two: the Atropos size rule refuses to send it
    expect(checkGroup(sdg, { groupSize: 2, dropEqualScores: true, maxTokenLen: 100 })).toMatchObject({
      reason: "group_size",
    });
  });

  it("drops inference_logprobs for the whole group when any sequence lacks them", () => {
    const line = buildGroup({ ...ctx, withTokens: true }, [
      {
        result: result({ taskId: "a", index: 0 }),
        messages: chat("a"),
        sequences: [{ tokens: [1], masks: [1], inferenceLogprobs: null, reward: 1 }],
      },
      {
        result: result({ taskId: "a", index: 1, reward: 0 }),
        messages: chat("b"),
        sequences: [{ tokens: [2], masks: [2], inferenceLogprobs: [-1], reward: 0 }],
      },
    ]);
    expect(line.inference_logprobs).toBeUndefined();
    expect(toScoredDataGroup(line)!.tokens).toEqual([[1], [2]]);
    // a mixed group: each sequence that has logprobs keeps its own in its overrides
    expect(line.overrides![0]).not.toHaveProperty("inference_logprobs");
    expect(line.overrides![1]).toMatchObject({ inference_logprobs: [-1] });
  });

  it("records sampling parameters: the group's when one policy's, each trajectory's own seed", () => {
    const policy = "openai:http://h/v1#m?temperature=1&seed=10";
    const line = buildGroup(ctx, [
      { result: { ...result({ taskId: "a", index: 0, reward: 1 }), policy }, messages: chat("a") },
      { result: { ...result({ taskId: "a", index: 1, reward: 0 }), policy }, messages: chat("b") },
    ]);
    expect(line.generation_params).toEqual({ temperature: 1, seed: 10 });
    expect(line.overrides!.map((o) => o.generation_params)).toEqual([
      { temperature: 1, seed: 10 },
      { temperature: 1, seed: 11 },
    ]);
    const mixed = buildGroup(ctx, [
      { result: { ...result({ taskId: "a", index: 0, reward: 1 }), policy }, messages: chat("a") },
      { result: result({ taskId: "a", index: 1, reward: 0 }), messages: chat("b") },
    ]);
    expect(mixed.generation_params).toBeUndefined();
    expect(mixed.overrides![1]).not.toHaveProperty("generation_params");
  });

  it("group ids name run and task", () => {
    expect(groupId("r", "t")).toBe("r:t");
  });
});
