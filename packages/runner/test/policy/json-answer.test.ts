import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { ResponseAccumulator } from "../../src/policy/chat.js";
import { jsonAnswerOf, OpenAiUpstream } from "../../src/policy/openai-upstream.js";
import { UpstreamError } from "../../src/policy/upstream.js";
import { requestPathOf } from "../../src/serve/request-path.js";

/**
 * A policy server answering HTTP 200 `application/json` whose body is cut or not an object: the
 * server's fault (an UpstreamError naming it, so the call counts toward policy_error), never a
 * "gateway fault" from a bare JSON.parse.
 */

const request = { model: "m", messages: [{ role: "user" as const, content: "hi" }], stream: true };

describe("a non-streamed answer that is not JSON", () => {
  it("pure: cut, not JSON, or not an object is an UpstreamError naming the server", () => {
    expect(jsonAnswerOf("srv", '{"choices":[]}')).toEqual({ choices: [] });
    for (const bad of ['{"choices": [', "<html>busy</html>", "[1]", "null"]) {
      const err = (() => {
        try {
          jsonAnswerOf("srv", bad);
        } catch (e) {
          return e;
        }
      })();
      expect(err).toBeInstanceOf(UpstreamError);
      expect((err as Error).message).toMatch(/^srv sent a(n application\/json)? (JSON )?answer that is not/);
    }
  });

  it("a real server's 200 with a cut JSON body: the call fails as the upstream's error", async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.end('{"id":"x","choices":[{"message":{"content":"hel');
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const { port } = server.address() as AddressInfo;
      const up = new OpenAiUpstream({ baseUrl: `http://127.0.0.1:${port}/v1`, model: "m" });
      const acc = new ResponseAccumulator();
      const call = { trajectoryId: "t", seq: 1, protocol: "openai" as const, raw: request, request };
      const err = await (async () => {
        for await (const ev of up.complete(call, new AbortController().signal)) acc.add(ev);
      })().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UpstreamError);
      expect((err as Error).message).toMatch(/application\/json answer that is not JSON/);
    } finally {
      server.close();
    }
  });
});

describe("requestPathOf (serve)", () => {
  it("origin-form is its path before '?'; absolute-form its URL's path; anything else none", () => {
    expect(requestPathOf("/v1/groups/a?x=%")).toBe("/v1/groups/a");
    expect(requestPathOf("//v1/groups")).toBe("//v1/groups");
    expect(requestPathOf("http://h:1/v1/schema?q")).toBe("/v1/schema");
    expect(requestPathOf("http://[")).toBeUndefined();
    expect(requestPathOf("http://x:99999/")).toBeUndefined();
    expect(requestPathOf("*")).toBeUndefined();
    expect(requestPathOf("v1/groups")).toBeUndefined();
  });
});
