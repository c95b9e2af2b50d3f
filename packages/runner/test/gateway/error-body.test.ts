import { describe, expect, it } from "vitest";
import { errorBodyOf } from "../../src/gateway/error-body.js";

describe("errorBodyOf: an error answer in the protocol the client spoke", () => {
  it("Anthropic's error envelope for the messages endpoint, OpenAI's (code = type) for chat completions", () => {
    expect(errorBodyOf("anthropic", "bad key", "authentication_error")).toEqual({
      type: "error",
      error: { type: "authentication_error", message: "bad key" },
    });
    expect(errorBodyOf("openai", "bad key", "authentication_error")).toEqual({
      error: { message: "bad key", type: "authentication_error", code: "authentication_error", param: null },
    });
  });
});
