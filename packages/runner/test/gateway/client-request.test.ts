import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HttpError } from "../../src/errors.js";
import {
  type InferenceServerDouble,
  startInferenceServerDouble,
} from "../../src/export/inference-server-double.js";
import { parseClientRequest, parsesAfterForwarding, upstreamCall } from "../../src/gateway/client-request.js";
import { createPolicyGateway } from "../../src/gateway/server.js";
import { parseTurnLog } from "../../src/gateway/turn-log.js";
import type { PolicyGateway } from "../../src/gateway/types.js";
import { OpenAiUpstream } from "../../src/policy/openai-upstream.js";
import { PlanUpstream } from "../../src/policy/scripted-upstream.js";
import { parseSse } from "../../src/policy/sse.js";

const good = {
  model: "cline-asks-this",
  messages: [
    { role: "system", content: "You are Cline." },
    { role: "user", content: [{ type: "text", text: "<task>say hi</task>" }] },
  ],
  stream: true,
  stream_options: { include_usage: true },
};

describe("parseClientRequest", () => {
  it("keeps an OpenAI body's bytes as its logged form; an Anthropic body is converted", () => {
    const body = Buffer.from(JSON.stringify(good));
    const openai = parseClientRequest("openai", body);
    expect(openai.requestJson).toBe(body);
    expect(openai.request.messages).toHaveLength(2);
    const anthropic = parseClientRequest(
      "anthropic",
      Buffer.from(JSON.stringify({ model: "m", max_tokens: 5, messages: [{ role: "user", content: "hi" }] })),
    );
    expect(anthropic.requestJson).toBeUndefined();
    expect(anthropic.request.messages.at(-1)).toMatchObject({ role: "user" });
  });

  it("names what is wrong: not JSON, or the first bad field", () => {
    const bad = (body: string) => {
      try {
        parseClientRequest("openai", Buffer.from(body));
      } catch (err) {
        expect(err).toBeInstanceOf(HttpError);
        return `${(err as HttpError).status} ${(err as HttpError).message}`;
      }
      throw new Error(`accepted: ${body}`);
    };
    expect(bad('{"model": "m", "messages": [')).toMatch(/^400 request body is not JSON: /);
    expect(bad(JSON.stringify({ ...good, messages: [] }))).toMatch(/^400 request field messages: /);
    expect(bad(JSON.stringify({ ...good, model: 7 }))).toMatch(/^400 request field model: /);
  });

  it("forwards before parsing only OpenAI calls to an upstream that sends the client's bytes", () => {
    expect(parsesAfterForwarding("openai", true)).toBe(true);
    expect(parsesAfterForwarding("openai", undefined)).toBe(false);
    expect(parsesAfterForwarding("anthropic", true)).toBe(false);
  });

  it("parses a deferred call's request on first read, once, and throws a bad body's error from that read", () => {
    let parses = 0;
    const body = Buffer.from(JSON.stringify(good));
    const call = upstreamCall({ trajectoryId: "t", seq: 1, protocol: "openai", rawJson: body }, () => {
      parses++;
      return parseClientRequest("openai", body);
    });
    expect(parses).toBe(0);
    expect(call.request.model).toBe("cline-asks-this");
    expect(call.raw["stream"]).toBe(true);
    expect(parses).toBe(2); // the memo is the gateway's (server.ts `client`); this one parses per read
    const broken = upstreamCall({ trajectoryId: "t", seq: 1, protocol: "openai" }, () =>
      parseClientRequest("openai", Buffer.from("nope")),
    );
    expect(() => broken.request).toThrow(HttpError);
  });
});

describe("policy gateway: a bad body is refused the same way whether or not it was forwarded first", () => {
  let dir: string;
  let gw: PolicyGateway;
  let vllm: InferenceServerDouble;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "fg-gw-bad-"));
    gw = await createPolicyGateway({ listen: { host: "127.0.0.1", port: 0 } });
    vllm = await startInferenceServerDouble({ reply: () => ({ text: "hi there" }) });
  });
  afterAll(async () => {
    await gw.close();
    await vllm.close();
    await rm(dir, { recursive: true, force: true });
  });

  const send = (url: string, token: string, body: string) =>
    fetch(`${url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
      body,
    });

  for (const upstreamKind of ["openai (forwards first)", "scripted (parses first)"] as const) {
    it(`${upstreamKind}: 400 naming the problem, counted as refused, no turn logged; a good call after it works`, async () => {
      const forwards = upstreamKind.startsWith("openai");
      const log = join(dir, `${forwards ? "openai" : "plan"}.jsonl`);
      const upstream = forwards
        ? new OpenAiUpstream({ baseUrl: vllm.baseUrl, model: "policy-model" })
        : new PlanUpstream("scripted", "scripted:bad", [{ text: "hi there" }]);
      expect((upstream as { forwardsClientJson?: boolean }).forwardsClientJson === true).toBe(forwards);
      const id = `bad-${forwards ? "openai" : "plan"}`;
      const route = gw.register(id, { upstream, turnLogPath: log });

      const notJson = await send(route.openaiBaseUrl!, route.token, '{"model": "m", "messages": [');
      expect(notJson.status).toBe(400);
      expect(((await notJson.json()) as { error: { message: string } }).error.message).toMatch(
        /^flakegym gateway: request body is not JSON: /,
      );
      const noMessages = await send(
        route.openaiBaseUrl!,
        route.token,
        JSON.stringify({ ...good, messages: [] }),
      );
      expect(noMessages.status).toBe(400);
      expect(((await noMessages.json()) as { error: { message: string } }).error.message).toMatch(
        /^flakegym gateway: request field messages: /,
      );

      const ok = await send(route.openaiBaseUrl!, route.token, JSON.stringify(good));
      expect(ok.status).toBe(200);
      let text = "";
      for await (const ev of parseSse(ok.body as unknown as AsyncIterable<Uint8Array>)) {
        if (ev.data !== "[DONE]") text += JSON.parse(ev.data).choices[0]?.delta?.content ?? "";
      }
      expect(text).toBe("hi there");
      const status = await gw.unregister(id);
      expect(status).toMatchObject({ requests: 3, ok: 1, refused: 2 });
      const turns = parseTurnLog(await readFile(log, "utf8"), log);
      expect(turns.map((t) => t.status)).toEqual(["ok"]);
      expect(turns[0]!.request.messages).toEqual(good.messages);
    });
  }
});
