import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { anthropicStreamToEvents } from "../../src/policy/anthropic-upstream.js";
import { ResponseAccumulator } from "../../src/policy/chat.js";
import { OpenAiUpstream } from "../../src/policy/openai-upstream.js";
import { UpstreamError } from "../../src/policy/upstream.js";

/**
 * A model server whose stream ends cleanly but holds no answer (only comments and pings), or ends
 * before the answer finished (no finish reason, no `[DONE]` / `message_stop`): the server's fault,
 * an UpstreamError (policy_error) — never an empty answer that Cline reports as an interrupted task
 * (agent_error). Found by the chaos campaign's `sse-no-data` server.
 */

let server: Server | undefined;
afterEach(() => {
  server?.close();
  server = undefined;
});

async function sseServer(body: string): Promise<string> {
  server = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.end(body);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
}

const request = { model: "m", messages: [{ role: "user" as const, content: "hi" }], stream: true };
const call = { trajectoryId: "t", seq: 1, protocol: "openai" as const, raw: request, request };

async function complete(baseUrl: string) {
  const up = new OpenAiUpstream({ baseUrl, model: "m" });
  const acc = new ResponseAccumulator();
  for await (const ev of up.complete(call, new AbortController().signal)) acc.add(ev);
  return acc.result();
}

const chunk = (content: string, finish: string | null = null) =>
  `data: ${JSON.stringify({ id: "c", choices: [{ index: 0, delta: { content }, finish_reason: finish }] })}\n\n`;

describe("an OpenAI stream that ends without an answer", () => {
  it("only comments, pings and retry fields: an UpstreamError saying no answer event came", async () => {
    const url = await sseServer(": keep-alive\n\nevent: ping\n\nretry: 10\n\n");
    const err = await complete(url).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UpstreamError);
    expect((err as Error).message).toMatch(/ended its stream without any answer event/);
  });

  it("chunks, then the end with no finish reason and no [DONE]: an UpstreamError; with either, the answer", async () => {
    const cut = await complete(await sseServer(chunk("hal"))).catch((e: unknown) => e);
    expect(cut).toBeInstanceOf(UpstreamError);
    expect((cut as Error).message).toMatch(/before the answer finished/);
    server?.close();
    expect((await complete(await sseServer(`${chunk("hello")}${chunk("", "stop")}`))).text).toBe("hello");
    server?.close();
    expect((await complete(await sseServer(`${chunk("hello")}data: [DONE]\n\n`))).text).toBe("hello");
  });
});

describe("an Anthropic stream that ends without an answer", () => {
  async function* events(list: { event?: string; data: string }[]) {
    yield* list;
  }
  const drain = async (list: { event?: string; data: string }[]) => {
    for await (const _ of anthropicStreamToEvents(events(list), "anthropic:x")) {
      // events are not needed
    }
  };
  const start = { data: JSON.stringify({ type: "message_start", message: { id: "m", usage: {} } }) };
  const stop = { data: JSON.stringify({ type: "message_stop" }) };

  it("no message_start, or no stop reason and no message_stop: an UpstreamError; a whole stream passes", async () => {
    await expect(drain([{ data: JSON.stringify({ type: "ping" }) }])).rejects.toThrow(
      /without any answer event/,
    );
    await expect(drain([start])).rejects.toThrow(/before the answer finished/);
    await expect(drain([start, stop])).resolves.toBeUndefined();
  });
});
