import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPolicyGateway } from "../../src/gateway/server.js";
import type { PolicyGateway } from "../../src/gateway/types.js";
import { AnthropicUpstream } from "../../src/policy/anthropic-upstream.js";
import { OpenAiUpstream } from "../../src/policy/openai-upstream.js";
import { secretForms } from "../../src/redact/redactor.js";

/**
 * A model server on loopback that echoes the key it was sent — in a response header, inside the
 * SSE data of an answer, and in the body of an error — and records every request body. The gateway
 * must keep the key out of what it answers the client, the turn log and the terminal message, and
 * must send the policy's sampling parameters instead of the client's.
 */

const KEY = 'sk-gw/echo+Key"9\\Zq=';
const b64 = (s: string) => Buffer.from(s).toString("base64");

interface Echo {
  readonly url: string;
  readonly bodies: Record<string, unknown>[];
  close(): Promise<void>;
}

async function startEchoServer(fail: (n: number) => boolean): Promise<Echo> {
  const bodies: Record<string, unknown>[] = [];
  const server: Server = createServer(async (req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
    bodies.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>);
    const key = String(req.headers.authorization ?? req.headers["x-api-key"] ?? "").replace(/^Bearer /, "");
    const echo = `${key} ${encodeURIComponent(key)} ${b64(`Bearer ${key}`)}`;
    if (fail(bodies.length)) {
      res.writeHead(500, { "content-type": "application/json", "x-echo-key": key });
      res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${echo}` } }));
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "x-echo-key": key });
    const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: "c1", model: "m", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.write(chunk({ role: "assistant", content: `your key: ${echo}` }));
    res.write(chunk({}, "stop"));
    res.end("data: [DONE]\n\n");
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

let dir: string;
let gw: PolicyGateway;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-gw-secrets-"));
  gw = await createPolicyGateway({ listen: { host: "127.0.0.1", port: 0 } });
});
afterAll(async () => {
  await gw.close();
  await rm(dir, { recursive: true, force: true });
});

const body = {
  model: "m",
  messages: [{ role: "user", content: "hi" }],
  stream: true,
  temperature: 0,
  max_completion_tokens: 100,
};
const call = (url: string, token: string) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
const leaks = (text: string) => secretForms(KEY).filter((f) => text.includes(f));

describe("policy gateway: a model server that echoes the key", () => {
  it("keeps the key out of answers, the turn log and the terminal message; sends the policy's sampling", async () => {
    const echo = await startEchoServer((n) => n > 1);
    try {
      const log = join(dir, "t1", "turns.jsonl");
      const route = gw.register("echo-1", {
        upstream: new OpenAiUpstream({
          baseUrl: `${echo.url}/v1`,
          model: "m",
          apiKey: KEY,
          tokenFacts: false,
        }),
        turnLogPath: log,
        sampling: { temperature: 1, top_p: 0.95, top_k: 20, max_tokens: 64, seed: 7 },
        limits: { maxConsecutiveFailures: 2 },
      });
      const answers: string[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await call(`${route.openaiBaseUrl}/chat/completions`, route.token);
        answers.push(`${JSON.stringify([...res.headers])} ${await res.text()}`);
      }
      // the SSE answer arrived (redacted), then errors
      expect(answers[0]).toContain("your key: [redacted]");
      expect(answers[1]).toContain("Incorrect API key provided: [redacted]");
      for (const a of answers) expect(leaks(a)).toEqual([]);
      const status = route.status();
      expect(status.terminal?.kind).toBe("policy_error");
      expect(status.terminal?.message).toContain("[redacted]");
      expect(leaks(status.terminal!.message)).toEqual([]);
      await gw.unregister("echo-1");
      const logged = await readFile(log, "utf8");
      expect(logged).toContain("[redacted]");
      expect(leaks(logged)).toEqual([]);
      // what the model server received: the policy's sampling, not Cline's temperature 0
      for (const b of echo.bodies.slice(0, 2)) {
        expect(b).toMatchObject({ temperature: 1, top_p: 0.95, top_k: 20, max_tokens: 64, seed: 7 });
        expect(b).not.toHaveProperty("max_completion_tokens");
      }
    } finally {
      await echo.close();
    }
  });

  it("an Anthropic upstream gets the sampling parameters too, without seed", async () => {
    const echo = await startEchoServer(() => false);
    try {
      const route = gw.register("echo-2", {
        upstream: new AnthropicUpstream({ baseUrl: echo.url, model: "m", apiKey: KEY }),
        sampling: { temperature: 0.8, top_k: 5, seed: 1 },
      });
      await (await call(`${route.openaiBaseUrl}/chat/completions`, route.token)).text();
      expect(echo.bodies[0]).toMatchObject({ temperature: 0.8, top_k: 5 });
      expect(echo.bodies[0]).not.toHaveProperty("seed");
      await gw.unregister("echo-2");
    } finally {
      await echo.close();
    }
  });

  it("without sampling parameters the client's are forwarded", async () => {
    const echo = await startEchoServer(() => false);
    try {
      const route = gw.register("echo-3", {
        upstream: new OpenAiUpstream({ baseUrl: `${echo.url}/v1`, model: "m", tokenFacts: false }),
      });
      await (await call(`${route.openaiBaseUrl}/chat/completions`, route.token)).text();
      expect(echo.bodies[0]).toMatchObject({ temperature: 0, max_completion_tokens: 100 });
      await gw.unregister("echo-3");
    } finally {
      await echo.close();
    }
  });
});
