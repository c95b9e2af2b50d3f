import { beforeAll, describe, expect, it } from "vitest";
import { MASKED, TemplateDriftError, tokenizeForTrainer } from "../../src/export/tokenize-for-trainer.js";
import { type ChatTokenizer, loadChatTokenizer } from "../../src/export/tokenizer.js";
import { ANSWERS, expectGolden, type Family, TOKENIZERS, xmlChat } from "./fixtures.js";

const toks = {} as Record<Family, ChatTokenizer>;
beforeAll(async () => {
  toks.qwen3 = await loadChatTokenizer(TOKENIZERS.qwen3);
  toks.llama3 = await loadChatTokenizer(TOKENIZERS.llama3);
});

/** The trained spans as [start, end) pairs. */
function spans(masks: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 0; i < masks.length; i++) {
    if (masks[i] === MASKED) continue;
    const s = i;
    while (i < masks.length && masks[i] !== MASKED) i++;
    out.push([s, i]);
  }
  return out;
}

describe("tokenizeForTrainer (Atropos tokenize_for_trainer)", () => {
  it.each(["qwen3", "llama3"] as const)(
    "%s: last-turn mode trains exactly the last answer and its end token",
    async (family) => {
      const tok = toks[family];
      const chat = xmlChat(3);
      const out = tokenizeForTrainer(tok, chat);
      expect(out.masks).toHaveLength(out.tokens.length);
      const s = spans(out.masks);
      expect(s).toHaveLength(1);
      const [start, end] = s[0]!;
      expect(end).toBe(out.tokens.length);
      expect(out.masks.slice(start)).toEqual(out.tokens.slice(start));
      const trained = tok.decode(out.tokens.slice(start, end));
      expect(trained).toContain(ANSWERS[2]);
      expect(trained.endsWith(tok.eosToken!) || trained.endsWith(`${tok.eosToken}\n`)).toBe(true);
      await expectGolden(family, "xml-3turns-last", out);
    },
  );

  it("llama3: all-turns mode trains every answer span and nothing else", async () => {
    const tok = toks.llama3;
    const out = tokenizeForTrainer(tok, xmlChat(3), { trainOnAllAssistantTurns: true });
    const s = spans(out.masks);
    expect(s).toHaveLength(3);
    for (const [i, [a, b]] of s.entries()) {
      expect(out.masks.slice(a, b)).toEqual(out.tokens.slice(a, b));
      expect(tok.decode(out.tokens.slice(a, b))).toBe(`${ANSWERS[i]}${tok.eosToken}`);
    }
    await expectGolden("llama3", "xml-3turns-all", out);
  });

  it("qwen3: all-turns mode detects the <think> history rewrite instead of writing wrong masks", async () => {
    const tok = toks.qwen3;
    const err = (() => {
      try {
        tokenizeForTrainer(tok, xmlChat(3), { trainOnAllAssistantTurns: true });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(TemplateDriftError);
    expect((err as TemplateDriftError).messageIndex).toBe(2);
    expect((err as Error).message).toMatch(/message 2 \(assistant\) renders differently alone/);
    // strict: false reproduces Atropos: mask ids that are not the tokens at their positions
    const atropos = tokenizeForTrainer(tok, xmlChat(3), { trainOnAllAssistantTurns: true, strict: false });
    const wrong = atropos.masks.filter((m, i) => m !== MASKED && m !== atropos.tokens[i]).length;
    expect(wrong).toBeGreaterThan(0);
    await expectGolden("qwen3", "xml-3turns-all-atropos-drift", { ...atropos, wrongMaskPositions: wrong });
  });

  it("drops a trailing EOS when the completion was cut by the length limit", () => {
    const tok = toks.llama3;
    const full = tokenizeForTrainer(tok, xmlChat(1));
    const cut = tokenizeForTrainer(tok, xmlChat(1), { finishReason: "length" });
    expect(full.tokens.at(-1)).toBe(tok.eosTokenId);
    expect(cut.tokens).toEqual(full.tokens.slice(0, -1));
    expect(cut.masks).toEqual(full.masks.slice(0, -1));
  });
});
