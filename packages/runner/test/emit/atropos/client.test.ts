import { gunzipSync, gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { AtroposError, answerText, encodeBody, parseAnswer } from "../../../src/emit/atropos/client.js";

// The client's pure halves; the requests themselves run against a real run-api in
// tests/integration/emit/atropos-emitter.test.ts.

describe("encodeBody", () => {
  it("no body: only the accept headers", () => {
    expect(encodeBody(undefined, 10)).toEqual({
      payload: undefined,
      headers: { accept: "application/json", "accept-encoding": "gzip" },
    });
  });

  it("JSON below the bound goes plain, at or above it gzip'd, with its length either way", () => {
    const small = encodeBody({ env_id: 1 }, 1024);
    expect(small.payload!.toString()).toBe('{"env_id":1}');
    expect(small.headers).toMatchObject({ "content-type": "application/json", "content-length": "12" });
    expect(small.headers["content-encoding"]).toBeUndefined();
    const big = encodeBody({ env_id: 1 }, 12);
    expect(big.headers["content-encoding"]).toBe("gzip");
    expect(big.headers["content-length"]).toBe(String(big.payload!.length));
    expect(gunzipSync(big.payload!).toString()).toBe('{"env_id":1}');
  });
});

describe("answerText", () => {
  it("inflates a gzip answer and passes a 2xx through", () => {
    expect(answerText("GET", "/info", 200, "gzip", gzipSync('{"a":1}'))).toBe('{"a":1}');
    expect(answerText("GET", "/info", 204, "", Buffer.from(""))).toBe("");
  });

  it("a non-2xx is an error carrying the status and body (5xx retryable, 4xx not)", () => {
    const e = answerText("POST", "/scored_data", 503, "", Buffer.from("busy")) as AtroposError;
    expect(e).toBeInstanceOf(AtroposError);
    expect(e.message).toBe("POST /scored_data answered HTTP 503: busy");
    expect([e.details.status, e.details.body, e.retryable]).toEqual([503, "busy", true]);
    expect((answerText("POST", "/x", 422, "", Buffer.from("no")) as AtroposError).retryable).toBe(false);
  });

  it("a gzip answer that does not inflate is an error naming the request", () => {
    const e = answerText("GET", "/info", 200, "GZIP", Buffer.from("not gzip")) as AtroposError;
    expect(e.message).toBe("GET /info: the gzip answer does not inflate");
  });
});

describe("parseAnswer", () => {
  const S = z.object({ batch_size: z.number() });
  it("parses JSON of the expected shape", () => {
    expect(parseAnswer("GET", "/info", '{"batch_size":4}', S)).toEqual({ batch_size: 4 });
  });
  it("names text that is not JSON, and the field of a wrong shape", () => {
    expect(() => parseAnswer("GET", "/info", "<html>", S)).toThrow(
      /answered with text that is not JSON: <html>/,
    );
    expect(() => parseAnswer("GET", "/info", '{"batch_size":"x"}', S)).toThrow(
      /unexpected shape: field 'batch_size'/,
    );
  });
});
