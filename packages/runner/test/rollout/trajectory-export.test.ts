import { describe, expect, it } from "vitest";
import type { ExportSegment, TrajectoryExport } from "../../src/export/export-trajectory.js";
import type { ChatTokenizer } from "../../src/export/tokenizer.js";
import type { TurnRecord } from "../../src/gateway/turn-log.js";
import { chatOf, messagesOf, sequencesOf, trajectoryExportOf } from "../../src/rollout/trajectory-export.js";
import { result } from "./fixtures.js";

const turn = (seq: number, over: Partial<TurnRecord> = {}): TurnRecord => ({
  v: 1,
  trajectoryId: "t-0",
  seq,
  startedAt: "2026-11-21T00:00:00.000Z",
  protocol: "openai",
  stream: true,
  upstream: "scripted",
  status: "ok",
  request: { model: "m", messages: [{ role: "user", content: `ask ${seq}` }] },
  response: { text: `answer ${seq}`, toolCalls: [], finishReason: "stop" },
  latency: { firstByteMs: 1, totalMs: 2 },
  ...over,
});

const segment = (index: number, seqs: number[], over: Partial<ExportSegment> = {}): ExportSegment => ({
  trajectoryId: "t-0",
  index,
  seqs,
  tokens: [index, 1, 2],
  masks: [-100, 1, 2],
  inference_logprobs: null,
  reward: 0.5,
  split: null,
  completionSource: "sampled",
  promptSource: "template",
  ...over,
});

const exportOf = (segments: ExportSegment[]): TrajectoryExport => ({
  trajectoryId: "t-0",
  segments,
  skipped: [],
});

describe("the trajectory's chat", () => {
  it("is a call's request plus its answer", () => {
    expect(chatOf(turn(1))).toEqual([
      { role: "user", content: "ask 1" },
      { role: "assistant", content: "answer 1" },
    ]);
    expect(chatOf(turn(1, { status: "timeout", response: undefined }))).toEqual([
      { role: "user", content: "ask 1" },
    ]);
  });

  it("is the last answered call's, else just the prompt", () => {
    const turns = [turn(1), turn(2), turn(3, { status: "upstream_error" })];
    expect(messagesOf(turns, "fix it").at(-1)).toEqual({ role: "assistant", content: "answer 2" });
    expect(messagesOf([], "fix it")).toEqual([{ role: "user", content: "fix it" }]);
  });
});

describe("sequencesOf", () => {
  const turns = [turn(1), turn(2), turn(3)];
  const split = { kind: "history_rewritten" as const, atSeq: 3, position: 7, detail: "condensed" };
  const two = exportOf([segment(0, [1, 2]), segment(1, [3], { split })]);

  it("one segment: one sequence with the whole reward, no segment or chat of its own", () => {
    const [only, ...rest] = sequencesOf(exportOf([segment(0, [1, 2, 3])]), turns, "last", 1);
    expect(rest).toEqual([]);
    expect(only).toEqual({ tokens: [0, 1, 2], masks: [-100, 1, 2], inferenceLogprobs: null, reward: 1 });
  });

  it('"last": the final segment of a split export, with the whole reward, its chat and why it split', () => {
    const seqs = sequencesOf(two, turns, "last", 1);
    expect(seqs).toHaveLength(1);
    expect(seqs[0]).toMatchObject({
      tokens: [1, 1, 2],
      reward: 1,
      messages: chatOf(turn(3)),
      // the first segment's 2 sampled tokens are not trained, and counted (never silent)
      segment: {
        index: 1,
        of: 2,
        split: "history_rewritten at call 3: condensed",
        untrainedSampledTokens: 2,
      },
    });
  });

  it('"all": every segment with the whole reward; the first says no split', () => {
    const seqs = sequencesOf(two, turns, "all", 1);
    expect(seqs.map((s) => s.reward)).toEqual([1, 1]);
    expect(seqs[0]?.segment).toEqual({ index: 0, of: 2 });
    expect(seqs[0]?.messages).toEqual(chatOf(turn(2)));
  });
});

describe("trajectoryExportOf", () => {
  const tok = {
    apply: () => {
      throw new Error("token_ids must be a non-empty array of integers");
    },
    encode: () => [],
    decode: () => "",
  } as unknown as ChatTokenizer;

  it("a token export that throws is the trajectory's exportError, not the group's error", () => {
    const turns = [turn(1)];
    const out = trajectoryExportOf(turns, result({ taskId: "a", index: 0 }), "last", tok);
    expect(out.sequences).toBeUndefined();
    expect(out.exportError).toBe("token_ids must be a non-empty array of integers");
    expect(out.messages.at(-1)).toMatchObject({ role: "assistant", content: "answer 1" });
  });

  it("without a tokenizer there is nothing to fail", () => {
    const out = trajectoryExportOf([turn(1)], result({ taskId: "a", index: 0 }), "last", undefined);
    expect(out).toEqual({ messages: chatOf(turn(1)) });
  });
});
