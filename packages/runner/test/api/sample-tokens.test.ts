import { beforeAll, describe, expect, it } from "vitest";
import { sampleTokensOf } from "../../src/api/sample-tokens.js";
import { doubleLogprob } from "../../src/export/inference-server-double.js";
import { type ChatTokenizer, loadChatTokenizer } from "../../src/export/tokenizer.js";
import { TOKENIZERS, turn } from "../export/fixtures.js";

let tok: ChatTokenizer;
beforeAll(async () => {
  tok = await loadChatTokenizer(TOKENIZERS.llama3);
});

describe("sampleTokensOf", () => {
  it("each sample gets the ids of the call that answered it; a sample no call produced gets none", () => {
    const ask = (seq: number, prompt: string, answer: string, sampled: boolean) => {
      const messages = [{ role: "user" as const, content: prompt }];
      const ids = [...tok.encode(answer), tok.eosTokenId!];
      return turn(
        seq,
        messages,
        sampled
          ? {
              text: answer,
              tokens: {
                promptIds: tok.apply(messages, { addGenerationPrompt: true }),
                ids,
                logprobs: ids.map((id, p) => doubleLogprob(id, p)),
              },
            }
          : { text: answer },
      );
    };
    const turns = [ask(1, "What is 2+2?", "4", true), ask(2, "Capital of France?", "Paris", false)];
    const out = sampleTokensOf(
      [
        { prompt: "Capital of France?", completion: "Paris", reward: 1 },
        { prompt: "What is 2+2?", completion: "4", reward: 1 },
        { prompt: "Unasked?", completion: "x", reward: 0 },
      ],
      turns,
      tok,
    );
    const sampled = turns[0]!.response!.tokens!;
    expect(out[1]!.tokens).toEqual({
      prompt_ids: sampled.promptIds,
      completion_ids: sampled.ids,
      logprobs: sampled.logprobs,
      source: "sampled",
      call: 1,
    });
    expect(out[0]!.tokens).toMatchObject({ source: "template", logprobs: null, call: 2 });
    expect(tok.decode(out[0]!.tokens!.completion_ids)).toContain("Paris");
    expect(out[2]).toEqual({ prompt: "Unasked?", completion: "x", reward: 0 });
  });
});
