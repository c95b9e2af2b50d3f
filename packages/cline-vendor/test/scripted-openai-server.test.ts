import { request } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ScriptedOpenAiServer,
  startScriptedOpenAiServer,
  xmlTool,
} from "../src/scripted-openai-server.js";
import { makeTempDir } from "./helpers.js";

const servers: ScriptedOpenAiServer[] = [];
async function start(...args: Parameters<typeof startScriptedOpenAiServer>) {
  const s = await startScriptedOpenAiServer(...args);
  servers.push(s);
  return s;
}
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const body = {
  model: "m",
  stream: true,
  stream_options: { include_usage: true },
  messages: [{ role: "user", content: "hi" }],
};

async function post(url: string, path = "/v1/chat/completions", headers: Record<string, string> = {}) {
  const res = await fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer tok", ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

function events(sse: string): unknown[] {
  return sse
    .split("\n\n")
    .filter((b) => b.startsWith("data: "))
    .map((b) => b.slice(6))
    .map((d) => (d === "[DONE]" ? d : JSON.parse(d)));
}

describe("scripted OpenAI-compatible server", () => {
  it("streams a text turn as chat.completion.chunk SSE with usage and [DONE], and records the request", async () => {
    const s = await start({ turns: [{ text: xmlTool.attemptCompletion("ok") }], chunkSize: 16 });
    const r = await post(s.url);
    expect(r.status).toBe(200);
    const ev = events(r.text) as {
      choices: { delta: { content?: string }; finish_reason: string | null }[];
      usage?: unknown;
    }[];
    expect(ev.at(-1)).toBe("[DONE]");
    const chunks = ev.slice(0, -1);
    const text = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? "")).join("");
    expect(text).toBe(xmlTool.attemptCompletion("ok"));
    expect(chunks.some((c) => c.choices[0]?.finish_reason === "stop")).toBe(true);
    expect(chunks.at(-1)!.usage).toMatchObject({
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
    });
    expect(s.requests).toHaveLength(1);
    expect(s.requests[0]).toMatchObject({ path: "/v1/chat/completions", turn: 0, answer: "reply", body });
    expect(s.nextTurn).toBe(1);
  });

  it("streams native tool calls with finish_reason tool_calls", async () => {
    const s = await start({
      turns: [{ tool_calls: [{ name: "write_to_file", arguments: { path: "a", content: "b" } }] }],
    });
    const ev = events((await post(s.url, "/chat/completions")).text) as {
      choices: {
        delta: { tool_calls?: { function: { name?: string; arguments: string } }[] };
        finish_reason: string | null;
      }[];
    }[];
    const calls = ev.slice(0, -1).flatMap((c) => c.choices.flatMap((ch) => ch.delta.tool_calls ?? []));
    expect(calls[0]!.function.name).toBe("write_to_file");
    expect(JSON.parse(calls.map((c) => c.function.arguments).join(""))).toEqual({ path: "a", content: "b" });
    expect(
      ev.some(
        (c) => (c as { choices: { finish_reason: string }[] }).choices?.[0]?.finish_reason === "tool_calls",
      ),
    ).toBe(true);
  });

  it("reports a turn's scripted usage instead of the estimate (the plan format's usage field)", async () => {
    const s = await start({
      turns: [
        { text: "hi", usage: { prompt_tokens: 90_000, completion_tokens: 7 } },
        { text: "x".repeat(40) },
      ],
    });
    const usageOf = async () =>
      (
        events((await post(s.url)).text) as { usage?: { prompt_tokens: number; completion_tokens: number } }[]
      ).find((e) => e.usage)!.usage;
    expect(await usageOf()).toMatchObject({ prompt_tokens: 90_000, completion_tokens: 7 });
    expect((await usageOf())!.completion_tokens).toBe(10);
  });

  it("injects N errors on a turn, then answers it", async () => {
    const s = await start({
      turns: [{ text: "a" }, { text: "b" }],
      faults: { 1: { kind: "status", status: 503, times: 2 } },
    });
    expect((await post(s.url)).status).toBe(200);
    expect((await post(s.url)).status).toBe(503);
    expect((await post(s.url)).status).toBe(503);
    expect((await post(s.url)).status).toBe(200);
    expect(s.requests.map((r) => `${r.turn}:${r.answer}`)).toEqual([
      "0:reply",
      "1:status",
      "1:status",
      "1:reply",
    ]);
    // exhausted: a 400 that says so
    const r = await post(s.url);
    expect(r.status).toBe(400);
    expect(r.text).toContain("all 2 scripted turns were used");
  });

  it("sends a malformed stream, and hangs until closed", async () => {
    const s = await start({ turns: [{ text: "a" }], faults: { 0: { kind: "malformed", times: 1 } } });
    const bad = await post(s.url);
    expect(() => events(bad.text)).toThrow();
    const h = await start({ turns: [{ text: "a" }], faults: { 0: { kind: "hang" } } });
    const ac = new AbortController();
    const pending = fetch(`${h.url}/v1/chat/completions`, {
      method: "POST",
      body: "{}",
      signal: ac.signal,
    }).then((r) => r.text());
    await h.waitForRequests(1);
    setTimeout(() => ac.abort(), 200);
    await expect(pending).rejects.toThrow();
    expect(h.requests[0]!.answer).toBe("hang");
  });

  it("checks the bearer token when told to, 404s other routes, listens on a unix socket too", async () => {
    await using tmp = await makeTempDir();
    const socketPath = join(tmp.path, "policy.sock");
    const s = await start({ turns: [{ text: "a" }], apiKey: "right", socketPath });
    expect((await post(s.url, "/v1/chat/completions", { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await post(s.url, "/v1/models")).status).toBe(404);
    const viaUnix = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = request(
        {
          socketPath,
          path: "/v1/chat/completions",
          method: "POST",
          headers: { authorization: "Bearer right" },
        },
        (res) => {
          let text = "";
          res.on("data", (c: Buffer) => {
            text += c.toString();
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
        },
      );
      req.on("error", reject);
      req.end(JSON.stringify(body));
    });
    expect(viaUnix.status).toBe(200);
    expect(viaUnix.text).toContain("[DONE]");
  });

  it("rejects an invalid script up front", async () => {
    await expect(startScriptedOpenAiServer({ turns: [{ txt: "typo" } as never] })).rejects.toThrow(
      /scripted turn 0 is invalid/,
    );
  });
});
