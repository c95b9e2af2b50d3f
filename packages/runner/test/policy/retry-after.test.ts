import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { ResponseAccumulator } from "../../src/policy/chat.js";
import { OpenAiUpstream } from "../../src/policy/openai-upstream.js";
import { DEFAULT_RETRY_AFTER_BOUND, parseRetryAfter, retryAfterWait } from "../../src/policy/retry-after.js";
import type { UpstreamCall } from "../../src/policy/upstream.js";

const request = { model: "m", messages: [{ role: "user" as const, content: "hi" }], stream: true };
const call: UpstreamCall = { trajectoryId: "t", seq: 1, protocol: "openai", raw: request, request };
const bound = DEFAULT_RETRY_AFTER_BOUND;

describe("Retry-After: pure decisions", () => {
  it("parses delay-seconds and HTTP-dates; anything else is no wait", () => {
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter("2", now)).toBe(2000);
    expect(parseRetryAfter(" 1.5 ", now)).toBe(1500);
    expect(parseRetryAfter("Thu, 01 Jan 2026 00:00:03 GMT", now)).toBe(3000);
    expect(parseRetryAfter("Wed, 31 Dec 2025 23:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter(["4"], now)).toBe(4000);
    for (const bad of [undefined, "", "-1", "soon", "1e3"]) expect(parseRetryAfter(bad, now)).toBeUndefined();
  });

  it("waits as asked on 429/503 within the bound; past it, or another status, no retry", () => {
    const base = { nowMs: 0, retries: 0, waitedMs: 0, bound };
    expect(retryAfterWait({ ...base, status: 429, retryAfter: "2" })).toBe(2000);
    expect(retryAfterWait({ ...base, status: 503, retryAfter: "0" })).toBe(0);
    expect(retryAfterWait({ ...base, status: 500, retryAfter: "2" })).toBeUndefined();
    expect(retryAfterWait({ ...base, status: 429, retryAfter: undefined })).toBeUndefined();
    expect(retryAfterWait({ ...base, status: 429, retryAfter: "31" })).toBeUndefined();
    expect(retryAfterWait({ ...base, status: 429, retryAfter: "20", waitedMs: 45_000 })).toBeUndefined();
    expect(retryAfterWait({ ...base, status: 429, retryAfter: "1", retries: 4 })).toBeUndefined();
  });

  it("never waits past the trajectory's end: a wait that would reach it goes back as the refusal", () => {
    const base = { status: 429, nowMs: 10_000, retries: 0, waitedMs: 0, bound };
    expect(retryAfterWait({ ...base, retryAfter: "20", deadlineAt: 25_000 })).toBeUndefined();
    expect(retryAfterWait({ ...base, retryAfter: "15", deadlineAt: 25_000 })).toBeUndefined();
    expect(retryAfterWait({ ...base, retryAfter: "14", deadlineAt: 25_000 })).toBe(14_000);
    expect(retryAfterWait({ ...base, retryAfter: "2", deadlineAt: 5_000 })).toBeUndefined();
  });
});

describe("Retry-After: a real upstream answering 429", () => {
  let server: Server | undefined;
  afterEach(async () => {
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  async function upstream(answers: Array<{ status: number; retryAfter?: () => string }>) {
    const at: number[] = [];
    server = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        at.push(performance.now());
        const a = answers[Math.min(at.length - 1, answers.length - 1)]!;
        if (a.status !== 200) {
          res.writeHead(a.status, {
            "content-type": "application/json",
            ...(a.retryAfter ? { "retry-after": a.retryAfter() } : {}),
          });
          res.end(JSON.stringify({ error: { message: "slow down", type: "rate_limit" } }));
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      });
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    return {
      up: new OpenAiUpstream({ baseUrl: `http://127.0.0.1:${port}/v1`, model: "m", tokenFacts: false }),
      at,
    };
  }

  async function run(up: OpenAiUpstream) {
    const acc = new ResponseAccumulator();
    for await (const ev of up.complete(call, new AbortController().signal)) acc.add(ev);
    return acc.result();
  }

  it("seconds, then an HTTP-date: each wait honoured (not +0.5 s), then the answer", async () => {
    const { up, at } = await upstream([
      { status: 429, retryAfter: () => "1" },
      { status: 429, retryAfter: () => new Date(Date.now() + 2000).toUTCString() },
      { status: 200 },
    ]);
    expect((await run(up)).text).toBe("ok");
    expect(at).toHaveLength(3);
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950);
    // an HTTP-date has 1 s resolution: at least 1 s, at most the 2 s asked plus slack
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(950);
    expect(at[2]! - at[1]!).toBeLessThan(4000);
  });

  it("a Retry-After past the bound is not waited: the call fails at once naming the 429", async () => {
    const { up, at } = await upstream([{ status: 429, retryAfter: () => "3600" }]);
    const t0 = performance.now();
    await expect(run(up)).rejects.toMatchObject({ status: 429 });
    expect(performance.now() - t0).toBeLessThan(2000);
    expect(at).toHaveLength(1);
  });
});
