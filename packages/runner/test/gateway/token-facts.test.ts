import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exportTrajectory } from "../../src/export/export-trajectory.js";
import {
  doubleLogprob,
  type InferenceServerDouble,
  startInferenceServerDouble,
} from "../../src/export/inference-server-double.js";
import { MASKED } from "../../src/export/tokenize-for-trainer.js";
import { type ChatTokenizer, loadChatTokenizer } from "../../src/export/tokenizer.js";
import { createPolicyGateway } from "../../src/gateway/server.js";
import { readTurnLog } from "../../src/gateway/turn-log.js";
import type { PolicyGateway } from "../../src/gateway/types.js";
import { OpenAiUpstream } from "../../src/policy/openai-upstream.js";
import { parseSse } from "../../src/policy/sse.js";
import { ANSWERS, RESULTS, SYSTEM, TASK, TOKENIZERS } from "../export/fixtures.js";

let dir: string;
let tok: ChatTokenizer;
let gw: PolicyGateway;
let vllm: InferenceServerDouble;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-facts-"));
  tok = await loadChatTokenizer(TOKENIZERS.qwen3);
  vllm = await startInferenceServerDouble({
    tokenizer: tok,
    reply: (_r, n) => ({ text: ANSWERS[n - 1] ?? "" }),
  });
  gw = await createPolicyGateway({ listen: { host: "127.0.0.1", port: 0 } });
});
afterAll(async () => {
  await gw.close();
  await vllm.close();
  await rm(dir, { recursive: true, force: true });
});

describe("token facts through the gateway", () => {
  it("records vLLM's sampled ids, logprobs and prompt ids, hides them from the client, and exports them aligned", async () => {
    const log = join(dir, "turns.jsonl");
    const route = gw.register("facts-1", {
      upstream: new OpenAiUpstream({ baseUrl: vllm.baseUrl, model: "Qwen/Qwen3-8B" }),
      turnLogPath: log,
    });
    const messages: { role: string; content: unknown }[] = [
      { role: "system", content: SYSTEM },
      { role: "user", content: [{ type: "text", text: TASK }] },
    ];
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${route.openaiBaseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${route.token}` },
        body: JSON.stringify({
          model: "cline-sees-this",
          messages,
          stream: true,
          stream_options: { include_usage: true },
          temperature: 0,
        }),
      });
      let text = "";
      for await (const ev of parseSse(res.body as unknown as AsyncIterable<Uint8Array>)) {
        if (ev.data === "[DONE]") continue;
        const chunk = JSON.parse(ev.data);
        expect(chunk).not.toHaveProperty("prompt_token_ids");
        expect(chunk.choices[0]?.logprobs ?? null).toBeNull();
        text += chunk.choices[0]?.delta?.content ?? "";
      }
      expect(text).toBe(ANSWERS[i]);
      messages.push({ role: "assistant", content: text });
      if (i < 2) messages.push({ role: "user", content: [{ type: "text", text: RESULTS[i] }] });
    }
    expect(vllm.requests[0]).toMatchObject({
      model: "Qwen/Qwen3-8B",
      logprobs: true,
      top_logprobs: 0,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
    });
    await gw.unregister("facts-1");

    const turns = await readTurnLog(log);
    expect(turns).toHaveLength(3);
    for (const [i, t] of turns.entries()) {
      const ids = t.response!.tokens!.ids!;
      expect(ids.at(-1)).toBe(tok.eosTokenId);
      expect(tok.decode(ids.slice(0, -1))).toBe(ANSWERS[i]);
      expect(t.response!.tokens!.logprobs).toEqual(ids.map((id, p) => doubleLogprob(id, p)));
      expect(t.response!.tokens!.promptIds).toEqual(
        tok.apply(t.request.messages, { addGenerationPrompt: true }),
      );
    }
    const [seg, ...rest] = exportTrajectory(turns, tok, { reward: 1 }).segments;
    expect(rest).toEqual([]);
    const pos = seg!.masks.flatMap((m, i) => (m === MASKED ? [] : [i]));
    expect(pos.map((p) => seg!.tokens[p])).toEqual(turns.flatMap((t) => t.response!.tokens!.ids!));
    expect(pos.map((p) => seg!.inference_logprobs![p])).toEqual(
      turns.flatMap((t) => t.response!.tokens!.logprobs!),
    );
  });
});
