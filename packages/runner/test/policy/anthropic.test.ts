import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { anthropicToChatRequest, chatRequestToAnthropic } from "../../src/policy/anthropic-convert.js";
import { AnthropicUpstream } from "../../src/policy/anthropic-upstream.js";
import { ResponseAccumulator } from "../../src/policy/chat.js";
import { encodeSse } from "../../src/policy/sse.js";

const CLINE_BODY = {
  model: "claude-sonnet-4-5-20250929",
  max_tokens: 8192,
  temperature: 0,
  system: [{ type: "text", text: "You are Cline.", cache_control: { type: "ephemeral" } }],
  messages: [
    { role: "user", content: [{ type: "text", text: "<task>go</task>" }] },
    {
      role: "assistant",
      content: [
        { type: "thinking", thinking: "plan", signature: "sig" },
        { type: "text", text: "Writing." },
        { type: "tool_use", id: "toolu_1", name: "write_to_file", input: { path: "a", content: "b" } },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "saved" }] },
        { type: "text", text: "<environment_details>x</environment_details>" },
      ],
    },
  ],
  tools: [{ name: "write_to_file", description: "w", input_schema: { type: "object", properties: {} } }],
  tool_choice: { type: "any" },
  stream: true,
};

describe("Anthropic ⇄ canonical conversion", () => {
  it("maps system, thinking, tool_use and tool_result the way chat templates expect", () => {
    const req = anthropicToChatRequest(CLINE_BODY);
    expect(req.messages).toEqual([
      { role: "system", content: "You are Cline." },
      { role: "user", content: [{ type: "text", text: "<task>go</task>" }] },
      {
        role: "assistant",
        content: "Writing.",
        reasoning_content: "plan",
        tool_calls: [
          {
            id: "toolu_1",
            type: "function",
            function: { name: "write_to_file", arguments: '{"path":"a","content":"b"}' },
          },
        ],
      },
      { role: "tool", tool_call_id: "toolu_1", content: "saved" },
      { role: "user", content: [{ type: "text", text: "<environment_details>x</environment_details>" }] },
    ]);
    expect(req.tools?.[0]?.function.name).toBe("write_to_file");
    expect(req.tool_choice).toBe("required");
  });

  it("converts back to alternating Anthropic messages", () => {
    const back = chatRequestToAnthropic(anthropicToChatRequest(CLINE_BODY), "m");
    expect(back["system"]).toBe("You are Cline.");
    expect(back["tool_choice"]).toEqual({ type: "any" });
    const messages = back["messages"] as { role: string; content: { type: string }[] }[];
    expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(messages[2]!.content.map((b) => b.type)).toEqual(["tool_result", "text"]);
    expect(messages[1]!.content.at(-1)).toEqual({
      type: "tool_use",
      id: "toolu_1",
      name: "write_to_file",
      input: { path: "a", content: "b" },
    });
  });
});

describe("AnthropicUpstream", () => {
  let server: Server;
  let base: string;
  const seen: { headers: Record<string, unknown>; body: Record<string, unknown> }[] = [];
  beforeAll(async () => {
    server = createServer(async (req, res) => {
      let body = "";
      for await (const c of req) body += c;
      seen.push({ headers: req.headers, body: JSON.parse(body) });
      if (req.url !== "/v1/messages") {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      const send = (type: string, data: Record<string, unknown>) =>
        res.write(encodeSse({ event: type, data: JSON.stringify({ type, ...data }) }));
      send("message_start", {
        message: {
          id: "msg_1",
          model: "claude-x",
          usage: { input_tokens: 321, output_tokens: 1, cache_read_input_tokens: 300 },
        },
      });
      send("ping", {});
      send("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
      send("content_block_delta", { index: 0, delta: { type: "text_delta", text: "Done" } });
      send("content_block_stop", { index: 0 });
      send("content_block_start", {
        index: 1,
        content_block: { type: "tool_use", id: "toolu_9", name: "attempt_completion", input: {} },
      });
      send("content_block_delta", {
        index: 1,
        delta: { type: "input_json_delta", partial_json: '{"result":' },
      });
      send("content_block_delta", { index: 1, delta: { type: "input_json_delta", partial_json: '"ok"}' } });
      send("content_block_stop", { index: 1 });
      send("message_delta", { delta: { stop_reason: "tool_use" }, usage: { output_tokens: 17 } });
      send("message_stop", {});
      res.end();
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("passes an Anthropic client's body through with the upstream model and key, and parses the stream", async () => {
    const up = new AnthropicUpstream({
      baseUrl: base,
      model: "claude-upstream",
      apiKey: "sk-ant-test-secret",
    });
    const acc = new ResponseAccumulator();
    const call = {
      trajectoryId: "t",
      seq: 1,
      protocol: "anthropic" as const,
      raw: CLINE_BODY,
      request: anthropicToChatRequest(CLINE_BODY),
    };
    for await (const ev of up.complete(call, new AbortController().signal)) acc.add(ev);
    expect(acc.result()).toEqual({
      text: "Done",
      toolCalls: [{ id: "toolu_9", name: "attempt_completion", arguments: '{"result":"ok"}' }],
      finishReason: "tool_calls",
      usage: { promptTokens: 321, completionTokens: 17, cacheReadTokens: 300 },
      upstreamRequestId: "msg_1",
      model: "claude-x",
    });
    const last = seen.at(-1)!;
    expect(last.headers["x-api-key"]).toBe("sk-ant-test-secret");
    expect(last.headers["anthropic-version"]).toBe("2023-06-01");
    expect(last.body).toEqual({ ...CLINE_BODY, model: "claude-upstream" });
    expect(up.secrets).toEqual(["sk-ant-test-secret"]);
  });

  it("converts an OpenAI client's request to a Messages body", async () => {
    const up = new AnthropicUpstream({ baseUrl: base, model: "claude-upstream" });
    const request = {
      model: "gpt-x",
      messages: [
        { role: "system" as const, content: "S" },
        { role: "user" as const, content: "hi" },
      ],
    };
    for await (const _ of up.complete(
      { trajectoryId: "t", seq: 1, protocol: "openai", raw: request, request },
      new AbortController().signal,
    )) {
      // drain
    }
    expect(seen.at(-1)!.body).toEqual({
      model: "claude-upstream",
      max_tokens: 8192,
      system: "S",
      messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
      stream: true,
    });
  });
});
