import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  type InferenceServerDouble,
  startInferenceServerDouble,
} from "../../src/export/inference-server-double.js";
import { startGatewayThread, type ThreadedPolicyGateway } from "../../src/gateway/thread.js";
import { parseTurnLog } from "../../src/gateway/turn-log.js";
import type { GatewayTerminal } from "../../src/gateway/types.js";
import { OpenAiUpstream } from "../../src/policy/openai-upstream.js";
import { PlanUpstream } from "../../src/policy/scripted-upstream.js";
import { parseSse } from "../../src/policy/sse.js";
import { runSecrets } from "../../src/redact/redactor.js";

// The gateway in its own thread: the same behaviour as in the runner's (server.test.ts), with the
// control plane crossing a message channel. One thread for the suite: it compiles its sources.
let dir: string;
let gw: ThreadedPolicyGateway;
let double: InferenceServerDouble;
const API_KEY = "sk-thread-test-secret-0123456789";

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-gw-thread-"));
  // the whole answer in one chunk: a secret is redacted within a chunk (as in the runner's thread)
  double = await startInferenceServerDouble({
    reply: () => ({ text: `the key is ${API_KEY}. done` }),
    chunk: 1000,
  });
  gw = await startGatewayThread({
    listen: [{ host: "127.0.0.1", port: 0 }, { socketPath: join(dir, "gw.sock") }],
  });
}, 90_000);
afterAll(async () => {
  await gw?.close();
  await double?.close();
  await rm(dir, { recursive: true, force: true });
});

const chatBody = {
  model: "m",
  messages: [
    { role: "system", content: "You are Cline." },
    { role: "user", content: [{ type: "text", text: "<task>write hello.txt</task>" }] },
  ],
  stream: true,
  stream_options: { include_usage: true },
};

async function call(route: { openaiBaseUrl: string | undefined; token: string }) {
  const res = await fetch(`${route.openaiBaseUrl}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${route.token}` },
    body: JSON.stringify(chatBody),
  });
  let text = "";
  if (res.headers.get("content-type")?.includes("text/event-stream")) {
    for await (const ev of parseSse(res.body as unknown as AsyncIterable<Uint8Array>)) {
      if (ev.data === "[DONE]") continue;
      const chunk = JSON.parse(ev.data) as { choices?: { delta?: { content?: string } }[] };
      text += chunk.choices?.[0]?.delta?.content ?? "";
    }
  } else text = await res.text();
  return { status: res.status, text };
}

describe("policy gateway in its own thread", () => {
  it("serves a portable upstream from the thread: stream, status, redaction, turn log", async () => {
    const log = join(dir, "portable", "turns.jsonl");
    const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "served", apiKey: API_KEY });
    const route = gw.register("portable-1", { upstream, turnLogPath: log });
    expect(runSecrets.values()).toContain(API_KEY);
    const r = await call(route);
    expect(r.status).toBe(200);
    expect(r.text).toBe("the key is [redacted]. done");
    // the call counts as in flight until its turn line is written, which may end after the client's
    // last byte (and a loaded thread may answer `status` late): wait, bounded, for it to settle
    await vi.waitFor(() => expect(route.status().inFlight).toBe(0), { timeout: 10_000, interval: 50 });
    const status = route.status();
    expect(status).toMatchObject({ requests: 1, ok: 1, failed: 0, inFlight: 0 });
    expect(status.completionTokens).toBeGreaterThan(0);
    expect(gw.status("portable-1")).toEqual(status);
    const final = await gw.unregister("portable-1");
    expect(final).toMatchObject({ requests: 1, ok: 1 });
    const turns = parseTurnLog(await readFile(log, "utf8"));
    expect(turns.map((t) => t.status)).toEqual(["ok"]);
    expect(JSON.stringify(turns)).not.toContain(API_KEY);
    expect(gw.status("portable-1")).toBeUndefined();
  });

  it("hands a scripted plan's calls back to the runner's thread; its terminal failure ends the trajectory", async () => {
    const plan = new PlanUpstream("scripted", "scripted:thread", [{ text: "one turn only" }]);
    const route = gw.register("plan-1", { upstream: plan, turnLogPath: join(dir, "plan", "turns.jsonl") });
    const first = await call(route);
    expect(first).toEqual({ status: 200, text: "one turn only" });
    expect(plan.consumed("plan-1")).toBe(1);
    const second = await call(route);
    expect(second.status).toBe(500);
    expect(second.text).toContain("has 1 turn");
    // the verdict crosses as a message: wait for it, bounded
    for (let i = 0; i < 200 && !route.signal.aborted; i++) await new Promise((r) => setTimeout(r, 10));
    const terminal = route.signal.reason as GatewayTerminal;
    expect(terminal.kind).toBe("policy_error");
    expect(route.status()).toMatchObject({ requests: 2, ok: 1, failed: 1 });
    await gw.unregister("plan-1");
  });

  it("refuses a call past maxRequests with the limit named, and checks registrations here", async () => {
    const upstream = new OpenAiUpstream({ baseUrl: double.baseUrl, model: "served" });
    const route = gw.register("limit-1", { upstream, limits: { maxRequests: 1 } });
    expect((await call(route)).status).toBe(200);
    const refused = await call(route);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain("maxRequests=1");
    for (let i = 0; i < 200 && !route.signal.aborted; i++) await new Promise((r) => setTimeout(r, 10));
    expect(route.signal.reason).toMatchObject({ kind: "limits_exceeded", limit: "model_requests" });
    expect(() => gw.register("limit-1", { upstream })).toThrow(/already registered/);
    expect(() => gw.register("bad id", { upstream })).toThrow(/cannot be used in a URL path/);
    await gw.unregister("limit-1");
  });
});

describe("policy gateway thread: crash", () => {
  it("a dead thread fails its trajectories with a named infra error, never a hang", async () => {
    const own = await startGatewayThread({ listen: { host: "127.0.0.1", port: 0 } });
    const plan = new PlanUpstream("scripted", "scripted:crash", [{ text: "never sent" }]);
    const route = own.register("crash-1", { upstream: plan });
    // the thread dies without being asked to close
    await own.thread.terminate();
    expect(route.signal.aborted).toBe(true);
    expect(String(route.signal.reason)).toMatch(/policy gateway thread exited/);
    expect((route.signal.reason as { code?: string }).code).toBe("E_GATEWAY");
    expect(() => own.register("crash-2", { upstream: plan })).toThrow(/policy gateway thread exited/);
    await expect(own.unregister("crash-1")).rejects.toThrow(/policy gateway thread exited/);
    // the listener went with the thread: a core's call fails at once instead of waiting
    await expect(call(route)).rejects.toThrow();
    await own.close();
  }, 90_000);

  it("closes once however many ask: the run's abort and the runner's close at the same time both resolve", async () => {
    const ac = new AbortController();
    const own = await startGatewayThread({ listen: { host: "127.0.0.1", port: 0 }, signal: ac.signal });
    let exits = 0;
    own.thread.on("exit", () => exits++);
    ac.abort(new Error("interrupted"));
    const [a, b] = await Promise.allSettled([own.close(), own.close()]);
    expect([a.status, b.status]).toEqual(["fulfilled", "fulfilled"]);
    await expect(own.close()).resolves.toBeUndefined();
    expect(exits).toBe(1);
  }, 90_000);
});
