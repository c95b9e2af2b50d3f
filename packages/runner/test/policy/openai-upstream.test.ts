import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type InferenceServerDouble,
  startInferenceServerDouble,
} from "../../src/export/inference-server-double.js";
import { ChatRequest, ResponseAccumulator } from "../../src/policy/chat.js";
import { OpenAiUpstream, TOKEN_FACT_PARAMS } from "../../src/policy/openai-upstream.js";
import type { UpstreamCall } from "../../src/policy/upstream.js";

const request = {
  model: "cline-model",
  messages: [{ role: "user" as const, content: "hi" }],
  stream: true,
  stream_options: { include_usage: true },
};
const call: UpstreamCall = { trajectoryId: "t", seq: 1, protocol: "openai", raw: request, request };

async function run(up: OpenAiUpstream, c: UpstreamCall = call) {
  const acc = new ResponseAccumulator();
  for await (const ev of up.complete(c, new AbortController().signal)) acc.add(ev);
  return acc.result();
}

describe("OpenAiUpstream", () => {
  let refusing: InferenceServerDouble;
  beforeAll(async () => {
    refusing = await startInferenceServerDouble({
      reply: () => ({ text: "hello there" }),
      refuseTokenFactParams: true,
    });
  });
  afterAll(() => refusing.close());

  it("asks for token facts, retries once without them when refused, and remembers", async () => {
    const up = new OpenAiUpstream({ baseUrl: refusing.baseUrl, model: "served", apiKey: "sk-test-123456" });
    expect((await run(up)).text).toBe("hello there");
    expect(refusing.requests).toHaveLength(2);
    expect(refusing.requests[0]).toMatchObject({ ...TOKEN_FACT_PARAMS, model: "served" });
    expect(refusing.requests[1]).not.toHaveProperty("return_token_ids");
    expect(up.tokenFactsRefused).toMatch(
      /^400: .*Unrecognized request argument supplied: return_tokens_as_token_ids/,
    );
    expect((await run(up)).text).toBe("hello there");
    expect(refusing.requests).toHaveLength(3);
    expect(refusing.requests[2]).not.toHaveProperty("logprobs");
  });

  it("once the server took the token-fact parameters, a later 400 is that call's error: no retry without them, ids kept after it", async () => {
    let calls = 0;
    const flaky = await startInferenceServerDouble({
      reply: () =>
        ++calls === 2
          ? { fail: { status: 400, message: "This model's maximum context length is 128 tokens" } }
          : { text: "ok" },
    });
    try {
      const up = new OpenAiUpstream({ baseUrl: flaky.baseUrl, model: "m" });
      expect((await run(up)).text).toBe("ok");
      await expect(run(up)).rejects.toMatchObject({ status: 400 });
      expect((await run(up)).text).toBe("ok");
      // three calls, three requests: the 400 was not retried, and every request asked for token facts
      expect(flaky.requests).toHaveLength(3);
      for (const r of flaky.requests) expect(r).toMatchObject(TOKEN_FACT_PARAMS);
      expect(up.tokenFactsRefused).toBeUndefined();
    } finally {
      await flaky.close();
    }
  });

  it("names the upstream and status on errors", async () => {
    const failing = await startInferenceServerDouble({
      reply: () => ({ fail: { status: 503, message: "overloaded" } }),
    });
    try {
      const up = new OpenAiUpstream({ baseUrl: failing.baseUrl, model: "m" });
      await expect(run(up)).rejects.toMatchObject({
        status: 503,
        message: expect.stringMatching(
          new RegExp(`openai:${failing.baseUrl}#m answered HTTP 503: .*overloaded`),
        ),
      });
    } finally {
      await failing.close();
    }
    const gone = new OpenAiUpstream({ baseUrl: "http://127.0.0.1:9/v1", model: "m" });
    await expect(run(gone)).rejects.toMatchObject({
      status: 502,
      message: expect.stringContaining("could not be reached"),
    });
  });

  it("forwards the client's bytes with model, stream options and token facts set, as it would serialize them", async () => {
    const double = await startInferenceServerDouble({ reply: () => ({ text: "ok" }) });
    try {
      const raw = {
        model: "cline-model",
        messages: [{ role: "user", content: 'say "hi" \\ ünï \u2028' }],
        stream: false,
        temperature: 0,
        tools: [{ type: "function", function: { name: "f", parameters: { model: "not this one" } } }],
      };
      const request = ChatRequest.parse(raw);
      const up = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "served" });
      // pretty-printed, so the bytes differ from any serialization of `raw`
      const rawJson = Buffer.from(JSON.stringify(raw, null, 2));
      await run(up, { trajectoryId: "t", seq: 2, protocol: "openai", raw, request, rawJson });
      await run(up, { trajectoryId: "t", seq: 3, protocol: "openai", raw, request });
      const want = {
        ...raw,
        model: "served",
        stream: true,
        stream_options: { include_usage: true },
        ...TOKEN_FACT_PARAMS,
      };
      expect(double.requests).toEqual([want, want]);
    } finally {
      await double.close();
    }
  });
});
