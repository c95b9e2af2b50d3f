import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPolicyGateway } from "../../src/gateway/server.js";
import type { PolicyGateway } from "../../src/gateway/types.js";
import { answerBytesOf, answerCapOf, DEFAULT_MAX_RESPONSE_BYTES } from "../../src/policy/limit-response.js";
import { OpenAiUpstream } from "../../src/policy/openai-upstream.js";

/**
 * A model server that answers 16 MiB in 1 MiB pieces, a piece every 300 ms: under the raw response
 * limit piece by piece, it used to be relayed whole to the agent. The cap applies to the whole
 * answer: the call is cut at the piece that passes it, promptly, as the policy's fault.
 */

let dir: string;
let gw: PolicyGateway;
let server: Server;
let baseUrl: string;
let piecesSent = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-answer-cap-"));
  gw = await createPolicyGateway({ listen: [{ host: "127.0.0.1", port: 0 }] });
  const piece = "x".repeat(1024 * 1024);
  server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "text/event-stream" });
    let n = 0;
    const send = () => {
      if (res.destroyed) return;
      if (n === 16) {
        res.end("data: [DONE]\n\n");
        return;
      }
      n++;
      piecesSent++;
      const chunk = {
        id: "c",
        object: "chat.completion.chunk",
        choices: [{ index: 0, delta: { content: piece } }],
      };
      res.write(`data: ${JSON.stringify(chunk)}\n\n`);
      setTimeout(send, 300);
    };
    send();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});
afterAll(async () => {
  await gw.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  await rm(dir, { recursive: true, force: true });
});

describe("the response cap applies to the whole answer", () => {
  it("pure: the answer cap is 1/16 of the response limit (at least 64 KiB); text, reasoning and tool arguments count", () => {
    expect(answerCapOf(DEFAULT_MAX_RESPONSE_BYTES)).toBe(1024 * 1024);
    expect(answerCapOf(256 * 1024)).toBe(64 * 1024);
    expect(answerBytesOf({ type: "text", text: "é" })).toBe(2);
    expect(answerBytesOf({ type: "tool_call", index: 0, name: "ab", arguments: "{}" })).toBe(4);
    expect(answerBytesOf({ type: "finish", reason: "stop" })).toBe(0);
  });

  it("16 MiB in 1 MiB pieces: cut at the second piece (seconds, not minutes), policy_error, little relayed", async () => {
    const upstream = new OpenAiUpstream({ baseUrl, model: "m", tokenFacts: false });
    const route = gw.register("pieces-1", { upstream, turnLogPath: join(dir, "turns.jsonl") });
    const t0 = Date.now();
    const res = await fetch(`${route.openaiBaseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${route.token}` },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], stream: true }),
    });
    const body = await res.text();
    const ms = Date.now() - t0;
    expect(ms).toBeLessThan(4_000);
    expect(body.length).toBeLessThan(3 * 1024 * 1024);
    expect(body).toContain("passed 1048576 bytes of text and tool arguments");
    expect(route.status().terminal).toMatchObject({ kind: "policy_error" });
    expect(piecesSent).toBeLessThan(8);
    await gw.unregister("pieces-1");
  });
});
