import { beforeAll, describe, expect, it } from "vitest";
import {
  doubleLogprob,
  refusedParam,
  sseChunk,
  startInferenceServerDouble,
  textChoices,
  tokenChoices,
  toolCallChoices,
} from "../../src/export/inference-server-double.js";
import { type ChatTokenizer, loadChatTokenizer } from "../../src/export/tokenizer.js";
import { TOKENIZERS } from "./fixtures.js";

let tok: ChatTokenizer;
beforeAll(async () => {
  tok = await loadChatTokenizer(TOKENIZERS.qwen3);
});

describe("the inference double's pure parts", () => {
  it("refusedParam names the first vLLM return_* parameter, only when refusing", () => {
    const body = { model: "m", logprobs: true, return_token_ids: true };
    expect(refusedParam(body, true)).toBe("return_token_ids");
    expect(refusedParam(body, false)).toBeUndefined();
    expect(refusedParam({ logprobs: true, top_logprobs: 0 }, true)).toBeUndefined();
  });

  it("sseChunk is one data event of a chat.completion.chunk", () => {
    expect(sseChunk("c-1", "m", { choices: [] })).toBe(
      'data: {"id":"c-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[]}\n\n',
    );
  });

  it("tokenChoices: deltas decode back to the text, ids in chunks with EOS, logprobs spelled token_id:<id>", () => {
    const text = "Hello there, a longer answer.";
    const ids = [...tok.encode(text), tok.eosTokenId!];
    const out = tokenChoices(tok, text, true, 3, { logprobs: true, tokenIds: true });
    expect(out.completionTokens).toBe(ids.length);
    expect(out.choices).toHaveLength(Math.ceil(ids.length / 3));
    expect(out.choices.map((c) => (c.delta as { content: string }).content).join("")).toBe(text);
    expect(out.choices.flatMap((c) => c.token_ids as number[])).toEqual(ids);
    const lps = out.choices.flatMap(
      (c) => (c.logprobs as { content: { token: string; logprob: number }[] }).content,
    );
    expect(lps.map((l) => l.token)).toEqual(ids.map((i) => `token_id:${i}`));
    expect(lps.map((l) => l.logprob)).toEqual(ids.map((i, p) => doubleLogprob(i, p)));
    const bare = tokenChoices(tok, text, false, 3, { logprobs: false, tokenIds: false });
    expect(bare.completionTokens).toBe(ids.length - 1);
    expect(bare.choices.every((c) => !("logprobs" in c) && !("token_ids" in c))).toBe(true);
  });

  it("textChoices and toolCallChoices without a tokenizer", () => {
    expect(textChoices("abcdefghij", 4)).toEqual({
      choices: ["abcd", "efgh", "ij"].map((content) => ({
        index: 0,
        delta: { content },
        finish_reason: null,
      })),
      completionTokens: 3,
    });
    expect(textChoices("", 4)).toEqual({ choices: [], completionTokens: 0 });
    expect(toolCallChoices([{ name: "f", arguments: "{}" }], 2)).toEqual([
      {
        index: 0,
        delta: {
          tool_calls: [
            { index: 0, id: "call_d2_0", type: "function", function: { name: "f", arguments: "{}" } },
          ],
        },
        finish_reason: null,
      },
    ]);
  });
});

describe("the inference double's routes", () => {
  it("answers the chat route, refuses vLLM parameters with 400 when asked, and 404s any other path", async () => {
    const d = await startInferenceServerDouble({
      refuseTokenFactParams: true,
      reply: () => ({ text: "hi" }),
    });
    try {
      const post = (path: string, body: unknown) =>
        fetch(`${d.baseUrl}${path}`, { method: "POST", body: JSON.stringify(body) });
      const chat = { model: "m", messages: [{ role: "user", content: "q" }], stream: true };
      const ok = await post("/chat/completions", chat);
      expect(ok.status).toBe(200);
      expect(await ok.text()).toMatch(
        /"content":"hi"[\s\S]*"finish_reason":"stop"[\s\S]*data: \[DONE\]\n\n$/,
      );
      const refused = await post("/chat/completions", { ...chat, return_token_ids: true });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toEqual({
        error: { message: "Unrecognized request argument supplied: return_token_ids" },
      });
      const missing = await post("/models", {});
      expect(missing.status).toBe(404);
      expect(await missing.json()).toEqual({ error: { message: "no route /v1/models" } });
      expect(d.requests).toHaveLength(3);
      expect(d.headers).toHaveLength(3);
    } finally {
      await d.close();
    }
  });
});
