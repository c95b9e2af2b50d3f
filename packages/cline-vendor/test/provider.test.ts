import { describe, expect, it } from "vitest";
import { toSnakeKeys } from "../src/case.js";
import { apiConfigurationFor, ProviderConfig, trajectoryToken } from "../src/provider.js";

describe("provider configuration", () => {
  it("OpenAI-compatible → the wire field names Cline reads (FACTS §6)", () => {
    const p = ProviderConfig.parse({
      kind: "openai",
      baseUrl: "http://127.0.0.1:9/v1",
      modelId: "qwen3-8b",
      contextWindow: 32768,
    });
    expect(toSnakeKeys(apiConfigurationFor(p, "tok", 120_000))).toEqual({
      open_ai_base_url: "http://127.0.0.1:9/v1",
      open_ai_api_key: "tok",
      plan_mode_api_provider: "OPENAI",
      act_mode_api_provider: "OPENAI",
      plan_mode_open_ai_model_id: "qwen3-8b",
      act_mode_open_ai_model_id: "qwen3-8b",
      plan_mode_open_ai_model_info: { context_window: 32768 },
      act_mode_open_ai_model_info: { context_window: 32768 },
      request_timeout_ms: 120_000,
    });
  });

  it("Anthropic-compatible → api_key, anthropic_base_url, api_model_id", () => {
    const p = ProviderConfig.parse({
      kind: "anthropic",
      baseUrl: "http://127.0.0.1:9",
      modelId: "claude-sonnet-4-5",
    });
    expect(toSnakeKeys(apiConfigurationFor(p, "tok"))).toEqual({
      api_key: "tok",
      anthropic_base_url: "http://127.0.0.1:9",
      plan_mode_api_provider: "ANTHROPIC",
      act_mode_api_provider: "ANTHROPIC",
      plan_mode_api_model_id: "claude-sonnet-4-5",
      act_mode_api_model_id: "claude-sonnet-4-5",
    });
  });

  it("validates: a URL, a model id, no unknown fields", () => {
    expect(() => ProviderConfig.parse({ kind: "openai", baseUrl: "not a url", modelId: "m" })).toThrow();
    expect(() => ProviderConfig.parse({ kind: "openai", baseUrl: "http://x", modelId: "" })).toThrow();
    expect(() =>
      ProviderConfig.parse({ kind: "openai", baseUrl: "http://x", modelId: "m", key: "k" }),
    ).toThrow();
    expect(() => ProviderConfig.parse({ kind: "gemini", baseUrl: "http://x", modelId: "m" })).toThrow();
  });

  it("per-trajectory tokens are fresh and recognisable", () => {
    const a = trajectoryToken();
    expect(a).toMatch(/^fgt-[A-Za-z0-9_-]{24}$/);
    expect(trajectoryToken()).not.toBe(a);
  });
});
