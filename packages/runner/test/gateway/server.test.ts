import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { request as httpRequest } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startInferenceServerDouble } from "../../src/export/inference-server-double.js";
import { RUN_TIMED_EVERY } from "../../src/gateway/serve-call.js";
import { createPolicyGateway } from "../../src/gateway/server.js";
import { parseTurnLog } from "../../src/gateway/turn-log.js";
import type { PolicyGateway } from "../../src/gateway/types.js";
import { OpenAiUpstream } from "../../src/policy/openai-upstream.js";
import { PlanUpstream } from "../../src/policy/scripted-upstream.js";
import { parseSse } from "../../src/policy/sse.js";

let dir: string;
let gw: PolicyGateway;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-gw-"));
  gw = await createPolicyGateway({
    listen: [{ host: "127.0.0.1", port: 0 }, { socketPath: join(dir, "gw.sock") }],
  });
});
afterAll(async () => {
  await gw.close();
  await rm(dir, { recursive: true, force: true });
});

const plan = (id: string, turns: ConstructorParameters<typeof PlanUpstream>[2]) =>
  new PlanUpstream("scripted", `scripted:${id}`, turns);

async function post(url: string, token: string, body: unknown, headers: Record<string, string> = {}) {
  return await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}`, ...headers },
    body: JSON.stringify(body),
  });
}

async function* bytesOf(text: string): AsyncGenerator<Uint8Array> {
  yield new TextEncoder().encode(text);
}

async function sseData(res: Response): Promise<unknown[]> {
  const out: unknown[] = [];
  for await (const ev of parseSse(res.body as unknown as AsyncIterable<Uint8Array>)) {
    out.push(ev.data === "[DONE]" ? "[DONE]" : JSON.parse(ev.data));
  }
  return out;
}

const chatBody = (extra: Record<string, unknown> = {}) => ({
  model: "some-unknown-model",
  messages: [
    { role: "system", content: "You are Cline." },
    { role: "user", content: [{ type: "text", text: "<task>write hello.txt</task>" }] },
  ],
  stream: true,
  stream_options: { include_usage: true },
  temperature: 0,
  ...extra,
});

describe("policy gateway: OpenAI chat completions", () => {
  it("streams a scripted XML turn as chat.completion.chunk events and logs the turn", async () => {
    const log = join(dir, "xml", "turns.jsonl");
    const route = gw.register("xml-1", {
      upstream: plan("xml", [
        {
          tool_calls: [{ name: "write_to_file", arguments: { path: "hello.txt", content: "hello\nworld" } }],
        },
      ]),
      turnLogPath: log,
    });
    const res = await post(`${route.openaiBaseUrl}/chat/completions`, route.token, chatBody());
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const events = await sseData(res);
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1) as {
      choices: { delta: { content?: string }; finish_reason: string | null }[];
      usage?: unknown;
    }[];
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe(
      "<write_to_file>\n<path>hello.txt</path>\n<content>\nhello\nworld\n</content>\n</write_to_file>",
    );
    expect(chunks.some((c) => c.choices[0]?.finish_reason === "stop")).toBe(true);
    expect(chunks.at(-1)?.usage).toMatchObject({
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
    });
    const status = await gw.unregister("xml-1");
    expect(status).toMatchObject({ requests: 1, ok: 1, failed: 0, terminal: undefined });
    expect(status?.lastAnswered).toEqual({ status: "ok" });
    const [turn] = parseTurnLog(await readFile(log, "utf8"));
    expect(turn).toMatchObject({
      seq: 1,
      protocol: "openai",
      stream: true,
      status: "ok",
      upstream: "scripted:xml",
    });
    expect(turn!.request.messages[0]).toEqual({ role: "system", content: "You are Cline." });
    expect(turn!.response!.text).toBe(text);
    expect(turn!.latency.firstByteMs).not.toBeNull();
    // the gateway's own part: measured, and never more than the whole call
    expect(turn!.latency.gatewayMs).toBeGreaterThanOrEqual(0);
    expect(turn!.latency.gatewayMs!).toBeLessThanOrEqual(turn!.latency.totalMs);
    // its run-capped part only when asked for (measureRunTime)
    expect(turn!.latency.gatewayRunMs).toBeUndefined();
  });

  it.skipIf(!existsSync("/proc/thread-self/schedstat"))(
    "with measureRunTime, logs the gateway's own part on a core of its own: never more than its wall own part (needs Linux schedstat)",
    async () => {
      const timed = await createPolicyGateway({
        listen: { host: "127.0.0.1", port: 0 },
        measureRunTime: true,
        // back-to-back calls: one may still be logging (in flight) as the next arrives
        maxCallsPerTrajectory: 64,
      });
      try {
        const log = join(dir, "timed", "turns.jsonl");
        const route = timed.register("timed-1", {
          upstream: plan(
            "timed",
            Array.from({ length: 2 * RUN_TIMED_EVERY }, (_, i) => ({ text: `answer ${i}` })),
          ),
          turnLogPath: log,
        });
        for (let i = 0; i < 2 * RUN_TIMED_EVERY; i++) {
          const body = chatBody({ stream: i % 2 === 0 });
          const res = await post(`${route.openaiBaseUrl}/chat/completions`, route.token, body);
          expect(res.status).toBe(200);
          await res.arrayBuffer();
        }
        await timed.unregister("timed-1");
        const turns = parseTurnLog(await readFile(log, "utf8"));
        expect(turns).toHaveLength(2 * RUN_TIMED_EVERY);
        // a sample of the calls is timed (each timing reads the clock twice per event)
        const sampled = turns.filter((t) => t.latency.gatewayRunMs !== undefined);
        expect(sampled).toHaveLength(2);
        for (const t of sampled) {
          expect(t.latency.gatewayRunMs).toBeGreaterThanOrEqual(0);
          expect(t.latency.gatewayRunMs!).toBeLessThanOrEqual(t.latency.gatewayMs!);
        }
      } finally {
        await timed.close();
      }
    },
  );

  it("sends native tool calls when the request offers tools, streamed and not", async () => {
    const route = gw.register("native-1", {
      upstream: plan("native", [
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "done" } }] },
        { tool_calls: [{ name: "attempt_completion", arguments: { result: "again" } }] },
      ]),
    });
    const tools = [
      { type: "function", function: { name: "attempt_completion", parameters: { type: "object" } } },
    ];
    const res = await post(
      `${route.openaiBaseUrl}/chat/completions`,
      route.token,
      chatBody({ tools, tool_choice: "auto" }),
    );
    const chunks = (await sseData(res)).slice(0, -1) as {
      choices: {
        delta: {
          tool_calls?: { index: number; id?: string; function: { name?: string; arguments: string } }[];
        };
        finish_reason: string | null;
      }[];
    }[];
    const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls[0]).toMatchObject({
      index: 0,
      id: expect.any(String),
      function: { name: "attempt_completion" },
    });
    expect(JSON.parse(calls.map((c) => c.function.arguments).join(""))).toEqual({ result: "done" });
    expect(chunks.some((c) => c.choices[0]?.finish_reason === "tool_calls")).toBe(true);

    const whole = await post(
      `${route.openaiBaseUrl}/chat/completions`,
      route.token,
      chatBody({ tools, stream: false }),
    );
    const body = (await whole.json()) as {
      choices: { message: { tool_calls: { function: { arguments: string } }[] } }[];
    };
    expect(JSON.parse(body.choices[0]!.message.tool_calls[0]!.function.arguments)).toEqual({
      result: "again",
    });
    await gw.unregister("native-1");
  });

  it("serves the same endpoint on the unix socket", async () => {
    const route = gw.register("sock-1", { upstream: plan("sock", [{ text: "hi" }]) });
    const body = JSON.stringify(chatBody({ stream: false }));
    const answer = await new Promise<string>((resolve, reject) => {
      const req = httpRequest(
        {
          socketPath: gw.socketPath!,
          path: `${route.path}/v1/chat/completions`,
          method: "POST",
          headers: { "content-type": "application/json", authorization: `Bearer ${route.token}` },
        },
        (res) => {
          let data = "";
          res.on("data", (c) => (data += c));
          res.on("end", () => resolve(data));
        },
      );
      req.on("error", reject);
      req.end(body);
    });
    expect(JSON.parse(answer).choices[0].message.content).toBe("hi");
    expect(route.baseUrlsFor("http://127.0.0.1:9999")).toEqual({
      openai: "http://127.0.0.1:9999/t/sock-1/v1",
      anthropic: "http://127.0.0.1:9999/t/sock-1",
    });
    await gw.unregister("sock-1");
  });
});

describe("policy gateway: streaming under load", () => {
  it("delivers a long answer whole and in order to a client that stops reading for a while", async () => {
    // ~600 KB of text arrives from the upstream at once: far more than the socket buffers take, so
    // the gateway must wait for the client to drain its writes, then go on
    const text = Array.from(
      { length: 3000 },
      (_, i) => `line ${String(i).padStart(5, "0")} ${"x".repeat(190)}\n`,
    ).join("");
    const double = await startInferenceServerDouble({ reply: () => ({ text }), chunk: 2000 });
    try {
      const log = join(dir, "slow", "turns.jsonl");
      const route = gw.register("slow-1", {
        upstream: new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m" }),
        turnLogPath: log,
        limits: { totalTimeoutMs: 30_000 },
      });
      const url = new URL(`${route.openaiBaseUrl}/chat/completions`);
      const received = await new Promise<string>((resolve, reject) => {
        const req = httpRequest(
          url,
          {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${route.token}` },
          },
          (res) => {
            let data = "";
            let paused = false;
            res.setEncoding("utf8");
            res.on("data", (c: string) => {
              data += c;
              if (!paused) {
                paused = true;
                res.pause();
                setTimeout(() => res.resume(), 300);
              }
            });
            res.on("end", () => resolve(data));
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end(JSON.stringify(chatBody()));
      });
      const events = [];
      for await (const ev of parseSse(bytesOf(received))) events.push(ev.data);
      expect(events.at(-1)).toBe("[DONE]");
      const streamed = events
        .slice(0, -1)
        .map(
          (d) =>
            (JSON.parse(d) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? "",
        )
        .join("");
      expect(streamed).toBe(text);
      expect(await gw.unregister("slow-1")).toMatchObject({ ok: 1, failed: 0 });
      const [turn] = parseTurnLog(await readFile(log, "utf8"));
      expect(turn!.response!.text).toBe(text);
    } finally {
      await double.close();
    }
  });

  it("logs a pretty-printed request (line breaks in the body) on one line", async () => {
    const log = join(dir, "pretty", "turns.jsonl");
    const route = gw.register("pretty-1", { upstream: plan("pretty", [{ text: "ok" }]), turnLogPath: log });
    const body = chatBody({ stream: false, tools: [{ type: "function", function: { name: "t" } }] });
    const res = await fetch(`${route.openaiBaseUrl}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${route.token}` },
      body: JSON.stringify(body, null, 2),
    });
    expect(res.status).toBe(200);
    await gw.unregister("pretty-1");
    const lines = (await readFile(log, "utf8")).split("\n").filter((l) => l !== "");
    expect(lines).toHaveLength(1);
    const [turn] = parseTurnLog(lines[0]!);
    expect(turn!.request).toEqual(body);
  });
});

describe("policy gateway: Anthropic messages", () => {
  it("streams text and tool_use blocks with message_start usage", async () => {
    const route = gw.register("anth-1", {
      upstream: plan("anth", [
        { text: "Let me finish.", tool_calls: [{ name: "attempt_completion", arguments: { result: "ok" } }] },
      ]),
    });
    const res = await fetch(`${route.anthropicBaseUrl}/v1/messages`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-api-key": route.token,
        "anthropic-version": "2023-06-01",
      },
      body: JSON.stringify({
        model: "claude-sonnet-4-5",
        max_tokens: 1024,
        system: [{ type: "text", text: "You are Cline." }],
        messages: [{ role: "user", content: [{ type: "text", text: "go" }] }],
        tools: [{ name: "attempt_completion", description: "d", input_schema: { type: "object" } }],
        stream: true,
      }),
    });
    expect(res.status).toBe(200);
    const types: string[] = [];
    let text = "";
    let json = "";
    let start: { message: { usage: { input_tokens: number } } } | undefined;
    let stop: string | undefined;
    for await (const ev of parseSse(res.body as unknown as AsyncIterable<Uint8Array>)) {
      const d = JSON.parse(ev.data);
      types.push(d.type);
      expect(ev.event).toBe(d.type);
      if (d.type === "message_start") start = d;
      if (d.type === "content_block_delta" && d.delta.type === "text_delta") text += d.delta.text;
      if (d.type === "content_block_delta" && d.delta.type === "input_json_delta")
        json += d.delta.partial_json;
      if (d.type === "message_delta") stop = d.delta.stop_reason;
    }
    expect(types[0]).toBe("message_start");
    expect(types.at(-1)).toBe("message_stop");
    expect(start!.message.usage.input_tokens).toBeGreaterThan(0);
    expect(text).toBe("Let me finish.");
    expect(JSON.parse(json)).toEqual({ result: "ok" });
    expect(stop).toBe("tool_use");
    await gw.unregister("anth-1");
  });
});

describe("policy gateway: routing, auth, limits", () => {
  it("answers 404 naming an unknown trajectory and 401 for a wrong token", async () => {
    const res = await post(`${gw.origin}/t/nope/v1/chat/completions`, "x", chatBody());
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
      "unknown trajectory 'nope'",
    );
    const route = gw.register("auth-1", { upstream: plan("a", [{ text: "x" }]) });
    const bad = await post(`${route.openaiBaseUrl}/chat/completions`, "wrong", chatBody());
    expect(bad.status).toBe(401);
    expect(await bad.text()).not.toContain(route.token);
    await gw.unregister("auth-1");
    const gone = await post(`${route.openaiBaseUrl}/chat/completions`, route.token, chatBody());
    expect(gone.status).toBe(404);
  });

  it("answers 413 naming the limit to a body over maxBodyBytes, counted as refused; the next call works", async () => {
    const small = await createPolicyGateway({ listen: { host: "127.0.0.1", port: 0 }, maxBodyBytes: 2000 });
    try {
      const route = small.register("big-1", { upstream: plan("big", [{ text: "fits" }]) });
      const big = chatBody({ messages: [{ role: "user", content: "x".repeat(10_000) }] });
      const res = await post(`${route.openaiBaseUrl}/chat/completions`, route.token, big);
      expect(res.status).toBe(413);
      expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
        "flakegym gateway: request body larger than 2000 bytes",
      );
      expect(route.status()).toMatchObject({ refused: 1, requests: 1 });
      const ok = await post(`${route.openaiBaseUrl}/chat/completions`, route.token, chatBody());
      expect(ok.status).toBe(200);
      expect(await sseData(ok)).toContain("[DONE]");
    } finally {
      await small.close();
    }
  });

  it("bounds one trajectory's calls in flight (429 before reading the body) and refuses a declared oversize body unread", async () => {
    const double = await startInferenceServerDouble({ reply: () => ({ hang: true }) });
    const small = await createPolicyGateway({
      listen: { host: "127.0.0.1", port: 0 },
      maxBodyBytes: 2000,
      maxCallsPerTrajectory: 2,
    });
    try {
      const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m" });
      const route = small.register("busy-1", { upstream, limits: { silenceTimeoutMs: 3_000 } });
      const other = small.register("busy-2", { upstream: plan("other", [{ text: "fine" }]) });
      const url = `${route.openaiBaseUrl}/chat/completions`;
      const hanging = [post(url, route.token, chatBody()), post(url, route.token, chatBody())];
      for (let i = 0; i < 200 && route.status().inFlight < 2; i++)
        await new Promise((r) => setTimeout(r, 10));
      const third = await post(url, route.token, chatBody());
      expect(third.status).toBe(429);
      expect(((await third.json()) as { error: { message: string } }).error.message).toContain(
        "trajectory 'busy-1' already has 2 model calls in flight",
      );
      // another trajectory is not held back by this one
      const ok = await post(`${other.openaiBaseUrl}/chat/completions`, other.token, chatBody());
      expect(ok.status).toBe(200);
      await ok.text();
      // a body declared larger than the bound: answered without waiting for (or reading) the body
      const declared = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = httpRequest(url, {
          method: "POST",
          headers: {
            authorization: `Bearer ${route.token}`,
            "content-type": "application/json",
            "content-length": String(64 * 1024 * 1024),
          },
        });
        req.on("response", (res) => {
          let body = "";
          res.on("data", (c: Buffer) => {
            body += c.toString();
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on("error", reject);
        req.write("{"); // one byte of the promised 64 MiB, then nothing
      });
      expect(declared.status).toBe(413);
      expect(declared.body).toContain("request body larger than 2000 bytes");
      await Promise.all(hanging.map((p) => p.then((r) => r.text()).catch(() => "")));
    } finally {
      await small.close();
      await double.close();
    }
  });

  it("refuses calls past maxRequests with a clear message and flags limits_exceeded", async () => {
    const route = gw.register("lim-1", {
      upstream: plan("lim", [{ text: "a" }, { text: "b" }, { text: "c" }]),
      limits: { maxRequests: 2 },
    });
    for (let i = 0; i < 2; i++) {
      const ok = await post(
        `${route.openaiBaseUrl}/chat/completions`,
        route.token,
        chatBody({ stream: false }),
      );
      expect(ok.status).toBe(200);
    }
    expect(route.signal.aborted).toBe(false);
    const refused = await post(
      `${route.openaiBaseUrl}/chat/completions`,
      route.token,
      chatBody({ stream: false }),
    );
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(
      /exceeded maxRequests=2 \(call 3 refused\)/,
    );
    expect(route.signal.aborted).toBe(true);
    expect(route.status().terminal).toMatchObject({ kind: "limits_exceeded", limit: "model_requests" });
    await gw.unregister("lim-1");
  });

  it("refuses the call after maxCompletionTokens were sampled and names that budget", async () => {
    const route = gw.register("lim-tok", {
      upstream: plan("lim-tok", [
        { text: "a", usage: { prompt_tokens: 10, completion_tokens: 50 } },
        { text: "b" },
      ]),
      limits: { maxCompletionTokens: 40 },
    });
    const call = () =>
      post(`${route.openaiBaseUrl}/chat/completions`, route.token, chatBody({ stream: false }));
    expect((await call()).status).toBe(200);
    const refused = await call();
    expect(refused.status).toBe(400);
    expect(route.status().terminal).toMatchObject({ kind: "limits_exceeded", limit: "completion_tokens" });
    expect(route.status().terminal?.message).toMatch(/maxCompletionTokens=40 \(50 sampled/);
    await gw.unregister("lim-tok");
  });

  it("ends a trajectory whose scripted plan ran out as policy_error", async () => {
    const route = gw.register("out-1", { upstream: plan("out", [{ text: "only" }]) });
    await (
      await post(`${route.openaiBaseUrl}/chat/completions`, route.token, chatBody({ stream: false }))
    ).text();
    const res = await post(
      `${route.openaiBaseUrl}/chat/completions`,
      route.token,
      chatBody({ stream: false }),
    );
    expect(res.status).toBe(500);
    expect(route.status().terminal).toMatchObject({ kind: "policy_error" });
    expect(route.status().terminal!.message).toMatch(/has 1 turn; model call 2/);
    await gw.unregister("out-1");
  });
});

describe("policy gateway: upstream failures and the watchdog", () => {
  it("a stream that goes silent after its first event is cut by the same silence watchdog", async () => {
    const double = await startInferenceServerDouble({
      reply: () => ({ hang: true, afterText: "I'll start" }),
    });
    try {
      const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m" });
      const log = join(dir, "stall", "turns.jsonl");
      const route = gw.register("stall-1", { upstream, limits: { silenceTimeoutMs: 400 }, turnLogPath: log });
      const t0 = Date.now();
      const res = await post(`${route.openaiBaseUrl}/chat/completions`, route.token, chatBody());
      await res.text();
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(route.status().terminal?.kind).toBe("timeout");
      await gw.unregister("stall-1");
      const [turn] = parseTurnLog(await readFile(log, "utf8"));
      expect(turn).toMatchObject({
        status: "timeout",
        error: expect.stringContaining("sent no event for 400 ms"),
      });
    } finally {
      await double.close();
    }
  });

  it("a stream that sends a small event every 100 ms past the trajectory's deadline is cut then, as the model server's (not left to the agent's wall clock)", async () => {
    const double = await startInferenceServerDouble({
      reply: () => ({ text: "x".repeat(2000) }),
      chunk: 1,
      intervalMs: 100,
    });
    try {
      const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m" });
      const log = join(dir, "trickle", "turns.jsonl");
      const limits = { silenceTimeoutMs: 2_000, deadlineAt: Date.now() + 1_500 };
      const route = gw.register("trickle-1", { upstream, limits, turnLogPath: log });
      const t0 = Date.now();
      const res = await post(`${route.openaiBaseUrl}/chat/completions`, route.token, chatBody());
      await res.text();
      // cut at the deadline (1.5 s), not after the 200 s the stream would take
      expect(Date.now() - t0).toBeLessThan(20_000);
      expect(route.status().terminal).toMatchObject({
        kind: "timeout",
        message: expect.stringContaining("still answering when the trajectory's time ran out"),
      });
      await gw.unregister("trickle-1");
      const [turn] = parseTurnLog(await readFile(log, "utf8"));
      expect(turn).toMatchObject({ status: "timeout", error: expect.stringContaining("deadlineAt") });
    } finally {
      await double.close();
    }
  });

  it("an answer over maxResponseBytes fails the call as the policy's fault at once; the turn line stays bounded", async () => {
    const max = 256 * 1024;
    const double = await startInferenceServerDouble({
      reply: () => ({ text: "x".repeat(4 * max) }),
      chunk: 8192,
    });
    try {
      const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m" });
      const log = join(dir, "huge", "turns.jsonl");
      const route = gw.register("huge-1", { upstream, limits: { maxResponseBytes: max }, turnLogPath: log });
      const res = await post(`${route.openaiBaseUrl}/chat/completions`, route.token, chatBody());
      const text = await res.text();
      expect(text).toContain("response size limit");
      // the answer (its text) passes 1/16 of the limit long before the raw body passes the limit
      expect(route.status().terminal).toMatchObject({
        kind: "policy_error",
        message: expect.stringContaining(`passed ${64 * 1024} bytes of text and tool arguments`),
      });
      await gw.unregister("huge-1");
      const raw = await readFile(log, "utf8");
      expect(raw.length).toBeLessThan(2 * max);
      const [turn] = parseTurnLog(raw);
      expect(turn).toMatchObject({
        status: "upstream_error",
        error: expect.stringContaining("--max-response-mb"),
      });
    } finally {
      await double.close();
    }
  });

  it("maxResponseBytes is bounded: a limit over 1 GiB is refused at registration", () => {
    expect(() =>
      gw.register("huge-2", {
        upstream: plan("h", [{ text: "x" }]),
        limits: { maxResponseBytes: 2 * 1024 * 1024 * 1024 },
      }),
    ).toThrow(/maxResponseBytes/);
  });

  it("turns a hanging upstream into 504 + timeout, and 5xx into policy_error after N in a row", async () => {
    const double = await startInferenceServerDouble({
      reply: (_req, n) => (n === 1 ? { hang: true } : { fail: { status: 500, message: "boom" } }),
    });
    try {
      const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m" });
      const log = join(dir, "fail", "turns.jsonl");
      const hang = gw.register("hang-1", { upstream, limits: { silenceTimeoutMs: 300 }, turnLogPath: log });
      const t0 = Date.now();
      const res = await post(`${hang.openaiBaseUrl}/chat/completions`, hang.token, chatBody());
      expect(res.status).toBe(504);
      expect(Date.now() - t0).toBeLessThan(5_000);
      expect(hang.status().terminal?.kind).toBe("timeout");
      const hangFinal = await gw.unregister("hang-1");
      const [turn] = parseTurnLog(await readFile(log, "utf8"));
      expect(turn).toMatchObject({ status: "timeout", error: expect.stringContaining("silenceTimeoutMs") });
      // the status carries the turn line's verdict: nobody needs to read the log back for it
      expect(hangFinal?.lastAnswered).toEqual({ status: turn!.status, error: turn!.error });

      const fail = gw.register("fail-1", { upstream, limits: { maxConsecutiveFailures: 2 } });
      const r1 = await post(`${fail.openaiBaseUrl}/chat/completions`, fail.token, chatBody());
      expect(r1.status).toBe(500);
      expect(fail.status().terminal).toBeUndefined();
      const r2 = await post(`${fail.openaiBaseUrl}/chat/completions`, fail.token, chatBody());
      expect(r2.status).toBe(500);
      expect(fail.status().terminal).toMatchObject({ kind: "policy_error" });
      expect(fail.status().terminal!.message).toContain("boom");
      // no turn log here: the status still says how the last answered call went
      expect((await gw.unregister("fail-1"))?.lastAnswered).toMatchObject({
        status: "upstream_error",
        error: expect.stringContaining("boom"),
      });
    } finally {
      await double.close();
    }
  });

  it("aborts the upstream call when the client disconnects", async () => {
    let upstreamAborted: () => void = () => {};
    const aborted = new Promise<void>((r) => (upstreamAborted = r));
    const double = await startInferenceServerDouble({ reply: () => ({ hang: true }) });
    try {
      const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m" });
      const complete = upstream.complete.bind(upstream);
      upstream.complete = (call, signal) => {
        signal.addEventListener("abort", () => upstreamAborted(), { once: true });
        return complete(call, signal);
      };
      const log = join(dir, "disc", "turns.jsonl");
      const route = gw.register("disc-1", { upstream, turnLogPath: log });
      const client = new AbortController();
      const pending = fetch(`${route.openaiBaseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${route.token}` },
        body: JSON.stringify(chatBody()),
        signal: client.signal,
      }).catch((err: unknown) => err);
      while (double.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
      expect(route.status().inFlight).toBe(1);
      client.abort();
      await pending;
      await aborted;
      while (route.status().inFlight > 0) await new Promise((r) => setTimeout(r, 10));
      expect(route.status().terminal).toBeUndefined();
      await gw.unregister("disc-1");
      const [turn] = parseTurnLog(await readFile(log, "utf8"));
      expect(turn).toMatchObject({ status: "aborted", error: expect.stringContaining("client closed") });
    } finally {
      await double.close();
    }
  });
});

describe("policy gateway: secrets and lazy routes", () => {
  it("redacts the upstream's key and the trajectory token from errors and the turn log", async () => {
    const key = "sk-unit-secret-0123456789";
    const double = await startInferenceServerDouble({
      reply: () => ({ fail: { status: 500, message: `upstream echoes Authorization: Bearer ${key}` } }),
    });
    try {
      const log = join(dir, "redact", "turns.jsonl");
      const route = gw.register("redact-1", {
        upstream: new OpenAiUpstream({ baseUrl: double.baseUrl, model: "m", apiKey: key }),
        turnLogPath: log,
      });
      const res = await post(`${route.openaiBaseUrl}/chat/completions`, route.token, chatBody());
      const body = await res.text();
      expect(double.headers[0]!["authorization"]).toBe(`Bearer ${key}`);
      expect(body).toContain("Bearer [redacted]");
      expect(body).not.toContain(key);
      await gw.unregister("redact-1");
      const text = await readFile(log, "utf8");
      expect(text).toContain("[redacted]");
      expect(text).not.toContain(key);
    } finally {
      await double.close();
    }
  });

  it("registers an unknown trajectory through resolveRoute", async () => {
    const lazy = await createPolicyGateway({
      listen: { host: "127.0.0.1", port: 0 },
      resolveRoute: (id) =>
        id.startsWith("lazy-") ? { upstream: plan(id, [{ text: "lazy" }]), token: "tok-lazy" } : undefined,
    });
    try {
      const ok = await post(
        `${lazy.origin}/t/lazy-1/v1/chat/completions`,
        "tok-lazy",
        chatBody({ stream: false }),
      );
      expect(
        ((await ok.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content,
      ).toBe("lazy");
      expect(lazy.status("lazy-1")).toMatchObject({ ok: 1 });
      const none = await post(`${lazy.origin}/t/other/v1/chat/completions`, "tok-lazy", chatBody());
      expect(none.status).toBe(404);
    } finally {
      await lazy.close();
    }
  });
});
