import { beforeAll, describe, expect, it } from "vitest";
import {
  callTokens,
  exportTrajectory,
  nearText,
  promptBoundary,
  type SegmentDraft,
  segmentOf,
  splitReason,
} from "../../src/export/export-trajectory.js";
import { doubleLogprob } from "../../src/export/inference-server-double.js";
import { MASKED } from "../../src/export/tokenize-for-trainer.js";
import { type ChatTokenizer, loadChatTokenizer } from "../../src/export/tokenizer.js";
import type { TurnRecord } from "../../src/gateway/turn-log.js";
import { ANSWERS, expectGolden, type Family, TOKENIZERS, turn, xmlChat } from "./fixtures.js";

const toks = {} as Record<Family, ChatTokenizer>;
beforeAll(async () => {
  toks.qwen3 = await loadChatTokenizer(TOKENIZERS.qwen3);
  toks.llama3 = await loadChatTokenizer(TOKENIZERS.llama3);
});

/** Turns as a vLLM-style server reports them: server prompt ids, sampled ids + EOS, logprobs. */
function sampledTurns(tok: ChatTokenizer, answers: readonly string[] = ANSWERS): TurnRecord[] {
  return answers.map((answer, i) => {
    const messages = xmlChat(i + 1, answers).slice(0, -1);
    const ids = [...tok.encode(answer), tok.eosTokenId!];
    return turn(i + 1, messages, {
      text: answer,
      tokens: {
        promptIds: tok.apply(messages, { addGenerationPrompt: true }),
        ids,
        logprobs: ids.map((id, p) => doubleLogprob(id, p)),
      },
    });
  });
}

/** Positions where masks are trained. */
const trained = (masks: readonly number[]) => masks.flatMap((m, i) => (m === MASKED ? [] : [i]));

describe("exportTrajectory", () => {
  it.each(["qwen3", "llama3"] as const)(
    "%s: sampled ids are used verbatim, one segment, logprobs aligned token for token",
    async (family) => {
      const tok = toks[family];
      const turns = sampledTurns(tok);
      const out = exportTrajectory(turns, tok, { reward: 1 });
      expect(out.skipped).toEqual([]);
      expect(out.segments).toHaveLength(1);
      const seg = out.segments[0]!;
      expect(seg).toMatchObject({
        seqs: [1, 2, 3],
        split: null,
        reward: 1,
        completionSource: "sampled",
        promptSource: "server",
      });
      expect(seg.masks).toHaveLength(seg.tokens.length);
      expect(seg.inference_logprobs).toHaveLength(seg.tokens.length);
      // every trained position holds its token id and the logprob the upstream reported for it
      const pos = trained(seg.masks);
      const sampledIds = turns.flatMap((t) => t.response!.tokens!.ids!);
      const sampledLps = turns.flatMap((t) => t.response!.tokens!.logprobs!);
      expect(pos.map((p) => seg.tokens[p])).toEqual(sampledIds);
      expect(pos.map((p) => seg.masks[p])).toEqual(sampledIds);
      expect(pos.map((p) => seg.inference_logprobs![p])).toEqual(sampledLps);
      expect(seg.inference_logprobs!.filter((_, i) => seg.masks[i] === MASKED).every((l) => l === 1)).toBe(
        true,
      );
      // the last prompt is a prefix of the segment: the model saw exactly these tokens
      const lastPrompt = turns[2]!.response!.tokens!.promptIds!;
      expect(seg.tokens.slice(0, lastPrompt.length)).toEqual(lastPrompt);
      // each call's completion span: together exactly the trained positions
      expect(seg.spans!.flatMap(([a, b]) => Array.from({ length: b - a }, (_, k) => a + k))).toEqual(pos);
      await expectGolden(family, "export-sampled-3turns", { ...seg, spans: undefined });

      const last = exportTrajectory(turns, tok, { mode: "last_assistant_turn" }).segments[0]!;
      expect(last.tokens).toEqual(seg.tokens);
      expect(trained(last.masks).map((p) => last.tokens[p])).toEqual(turns[2]!.response!.tokens!.ids);
      expect(last.reward).toBeNull();
    },
  );

  it("splits when Cline condenses the conversation; every segment carries the whole reward", () => {
    const tok = toks.llama3;
    const turns = sampledTurns(tok);
    // call 3 arrives with the first exchange dropped (context truncation keeps the task, drops a pair)
    const t3 = turns[2]!;
    const condensed = [t3.request.messages[0]!, t3.request.messages[1]!, ...t3.request.messages.slice(4)];
    turns[2] = {
      ...t3,
      request: { ...t3.request, messages: condensed },
      response: {
        ...t3.response!,
        tokens: { ...t3.response!.tokens!, promptIds: tok.apply(condensed, { addGenerationPrompt: true }) },
      },
    };
    const out = exportTrajectory(turns, tok, { reward: 1 });
    expect(out.segments.map((s) => s.seqs)).toEqual([[1, 2], [3]]);
    expect(out.segments.map((s) => s.reward)).toEqual([1, 1]);
    expect(out.segments[1]!.split).toMatchObject({ kind: "history_rewritten", atSeq: 3 });
    expect(out.segments[1]!.split!.detail).toMatch(/condensed or truncated/);
    expect(out.segments.every((s) => s.trajectoryId === "traj-1")).toBe(true);
  });

  it("qwen3 without sampled ids: the template's <think> rewrite splits every turn (recorded, never wrong masks)", async () => {
    const tok = toks.qwen3;
    const turns = ANSWERS.map((answer, i) => turn(i + 1, xmlChat(i + 1).slice(0, -1), { text: answer }));
    const out = exportTrajectory(turns, tok, { reward: 0.9 });
    expect(out.segments.map((s) => s.seqs)).toEqual([[1], [2], [3]]);
    expect(out.segments.slice(1).map((s) => s.split?.kind)).toEqual(["template_rewrite", "template_rewrite"]);
    for (const seg of out.segments) {
      expect(seg.completionSource).toBe("template");
      expect(seg.inference_logprobs).toBeNull();
      const pos = trained(seg.masks);
      expect(pos.every((p) => seg.masks[p] === seg.tokens[p])).toBe(true);
      expect(tok.decode(pos.map((p) => seg.tokens[p]!))).toMatch(/^<think>\n\n<\/think>\n\n/);
      expect(seg.reward).toBeCloseTo(0.9);
    }
    await expectGolden(
      "qwen3",
      "export-template-think-rewrite",
      out.segments.map((s) => ({ seqs: s.seqs, split: s.split, tokens: s.tokens, masks: s.masks })),
    );
  });

  it("llama3: an answer the template trims in history splits as answer_rerendered", () => {
    const tok = toks.llama3;
    const answers = [`${ANSWERS[0]}  \n`, ANSWERS[1]!, ANSWERS[2]!];
    const out = exportTrajectory(sampledTurns(tok, answers), tok);
    expect(out.segments.map((s) => s.seqs)).toEqual([[1], [2, 3]]);
    expect(out.segments[1]!.split).toMatchObject({ kind: "answer_rerendered", atSeq: 2 });
  });

  it.each(["qwen3", "llama3"] as const)(
    "%s: Cline truncates, then resends the same prompt twice: ordinary segment boundaries, no throw",
    (family) => {
      const tok = toks[family];
      const turns = sampledTurns(tok);
      // the replay of the reported behaviour: after call 2 the server reported a near-full context;
      // Cline dropped its history back to the task (call 3) and sent that same prompt again (call 4)
      const first = turns[0]!.request.messages;
      const resend = (seq: number, answer: string): TurnRecord => {
        const ids = [...tok.encode(answer), tok.eosTokenId!];
        return turn(seq, first, {
          text: answer,
          tokens: {
            promptIds: tok.apply(first, { addGenerationPrompt: true }),
            ids,
            logprobs: ids.map((id, p) => doubleLogprob(id, p)),
          },
        });
      };
      const all = [turns[0]!, turns[1]!, resend(3, ANSWERS[1]!), resend(4, ANSWERS[2]!)];
      const out = exportTrajectory(all, tok, { reward: 1 });
      expect(out.skipped).toEqual([]);
      expect(out.segments.map((s) => s.seqs)).toEqual([[1, 2], [3], [4]]);
      expect(out.segments.map((s) => s.split?.kind ?? null)).toEqual([
        null,
        "prompt_shrunk",
        "prompt_repeated",
      ]);
      expect(out.segments[2]!.split!.detail).toMatch(/sent call 3's prompt again/);
      // the prompt ends where the sequence goes on: nothing to decode on its side
      expect(out.segments[1]!.split!.detail).toMatch(/prompt has \(end\)/);
      // every sampled id is trained exactly once, in order
      const ids = out.segments.flatMap((s) => trained(s.masks).map((p) => s.tokens[p]));
      expect(ids).toEqual(all.flatMap((t) => t.response!.tokens!.ids!));
      expect(out.segments.map((s) => s.reward)).toEqual([1, 1, 1]);
    },
  );

  it("promptBoundary: a repeated prompt, a shrunk one, a diverging one", () => {
    expect(promptBoundary([1, 2, 3, 4], [1, 2], [1, 2])).toBe("repeated");
    expect(promptBoundary([1, 2, 3, 4], [1, 2, 3], [1, 2])).toBe("shrunk");
    expect(promptBoundary([1, 2, 3, 4], undefined, [1, 2, 3, 4])).toBe("shrunk");
    expect(promptBoundary([1, 2, 3, 4], [1, 2], [])).toBe("shrunk");
    expect(promptBoundary([1, 2, 3, 4], [1, 2], [1, 9])).toBe("diverged");
    expect(promptBoundary([1, 2], [1, 2], [1, 2, 3])).toBe("diverged");
  });

  it("nearText: an empty slice is (end), and a tokenizer that throws never escapes", () => {
    const throwing = {
      ...toks.llama3,
      decode: () => {
        throw new Error("token_ids must be a non-empty array of integers");
      },
    } as ChatTokenizer;
    expect(nearText(toks.llama3, [1, 2], 2)).toBe("(end)");
    expect(nearText(throwing, [1, 2, 3], 1)).toMatch(/^\(ids \[2,3\]; not decodable: token_ids must be/);
  });

  it("leaves out failed calls and says why", () => {
    const tok = toks.llama3;
    const turns = sampledTurns(tok);
    const failed: TurnRecord = {
      ...turns[1]!,
      seq: 99,
      status: "upstream_error",
      error: "HTTP 500",
      response: undefined,
    };
    const out = exportTrajectory([turns[0]!, failed, turns[1]!, turns[2]!], tok);
    expect(out.skipped).toEqual([{ seq: 99, reason: "status upstream_error: HTTP 500" }]);
    expect(out.segments).toHaveLength(1);
  });
});

describe("exportTrajectory's steps", () => {
  it("callTokens: server prompt and sampled ids when present, the template's otherwise", () => {
    const tok = toks.llama3;
    const messages = xmlChat(1).slice(0, -1);
    const templatePrompt = tok.apply(messages, { addGenerationPrompt: true });
    const ids = [...tok.encode(ANSWERS[0]!), tok.eosTokenId!];
    const sampled = turn(1, messages, {
      text: ANSWERS[0]!,
      tokens: { promptIds: [7, 8], ids, logprobs: [-1] },
    });
    expect(callTokens(sampled, tok, {}, true)).toEqual({
      prompt: [7, 8],
      promptSource: "server",
      completion: ids,
      // logprobs not aligned with the ids are dropped rather than misaligned
      logprobs: ids.map(() => null),
      completionSource: "sampled",
    });
    expect(callTokens(sampled, tok, {}, false)).toMatchObject({
      prompt: templatePrompt,
      promptSource: "template",
    });
    const plain = callTokens(turn(1, messages, { text: ANSWERS[0]! }), tok, {}, true);
    const full = tok.apply([...messages, { role: "assistant", content: ANSWERS[0]! }], {
      addGenerationPrompt: false,
    });
    expect(plain).toEqual({
      prompt: templatePrompt,
      promptSource: "template",
      completion: full.slice(templatePrompt.length),
      logprobs: full.slice(templatePrompt.length).map(() => null),
      completionSource: "template",
    });
  });

  it("callTokens: a template that does not render the answer after its generation prompt is a reason, not a segment", () => {
    const tok = toks.qwen3;
    const messages = xmlChat(1).slice(0, -1);
    const wrongPrompt = [...tok.apply(messages, { addGenerationPrompt: true }), 1];
    const r = callTokens(turn(1, messages, { text: "x", tokens: { promptIds: wrongPrompt } }), tok, {}, true);
    // the server prompt is not the template's, but the completion is cut at the template's own prompt
    expect(r).toMatchObject({ promptSource: "server", completionSource: "template" });
    // Qwen3 without thinking prompts with an empty <think> block; an answer with its own reasoning
    // renders another one in its place
    const noThinking = { templateKwargs: { enable_thinking: false } };
    expect(callTokens(turn(1, messages, { text: "<think>a</think>x" }), tok, noThinking, true)).toEqual({
      reason: expect.stringMatching(
        /^the chat template does not render the answer after its generation prompt \(differs at token \d+\)$/,
      ),
    });
  });

  const draftOf = (over: Partial<SegmentDraft>): SegmentDraft => ({
    seqs: [1],
    tokens: [1, 2, 3, 4],
    masks: [MASKED, MASKED, 3, 4],
    logprobs: [1, 1, -0.5, null],
    spans: [[2, 4]],
    split: null,
    completion: new Set(["sampled"]),
    prompt: new Set(["server"]),
    last: turn(1, [{ role: "user", content: "hi" }], { text: "a" }),
    lastPrompt: [1, 2],
    ...over,
  });

  it("splitReason: repeated and shrunk prompts, a rewritten history, each with where it left", () => {
    const tok = toks.llama3;
    const cur = draftOf({});
    const next = turn(2, [{ role: "user", content: "other" }], { text: "b" });
    expect(splitReason(cur, next, [1, 2], tok, {})).toMatchObject({
      kind: "prompt_repeated",
      atSeq: 2,
      position: 2,
      detail: expect.stringMatching(
        /^call 2 sent call 1's prompt again .*; at token 2: had .*, prompt has \(end\)$/,
      ),
    });
    expect(splitReason(cur, next, [1, 2, 3], tok, {})).toMatchObject({ kind: "prompt_shrunk", position: 3 });
    expect(splitReason(cur, next, [1, 5], tok, {})).toMatchObject({ kind: "history_rewritten", position: 1 });
  });

  it("segmentOf: last-turn mode masks earlier completions; logprobs only when every trained one is known", () => {
    const d = draftOf({
      tokens: [1, 2, 3, 4, 5],
      masks: [MASKED, 2, MASKED, 4, 5],
      logprobs: [1, -0.1, 1, -0.2, -0.3],
      spans: [
        [1, 2],
        [3, 5],
      ],
      seqs: [1, 2],
      prompt: new Set(["server", "template"]),
    });
    const at = { trajectoryId: "t", index: 1, mode: "all_assistant_turns" as const, reward: 1, count: 2 };
    expect(segmentOf(d, at)).toMatchObject({
      index: 1,
      masks: [MASKED, 2, MASKED, 4, 5],
      inference_logprobs: [1, -0.1, 1, -0.2, -0.3],
      // the trajectory's whole reward, whatever the segment count
      reward: 1,
      completionSource: "sampled",
      promptSource: "mixed",
    });
    expect(segmentOf(d, { ...at, mode: "last_assistant_turn", reward: undefined })).toMatchObject({
      masks: [MASKED, MASKED, MASKED, 4, 5],
      inference_logprobs: [1, 1, 1, -0.2, -0.3],
      reward: null,
    });
    expect(segmentOf(draftOf({}), at).inference_logprobs).toBeNull();
  });
});
