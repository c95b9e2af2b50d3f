import { describe, expect, it } from "vitest";
import { camelCase, snakeCase, toCamelKeys, toSnakeKeys } from "../src/case.js";

describe("snake_case ⇄ camelCase boundary", () => {
  it.each([
    ["openAiBaseUrl", "open_ai_base_url"],
    ["planModeOpenAiModelId", "plan_mode_open_ai_model_id"],
    ["enableCheckpointsSetting", "enable_checkpoints_setting"],
    ["isR1FormatRequired", "is_r1_format_required"],
    ["apiConfiguration", "api_configuration"],
    ["ts", "ts"],
  ])("%s ⇄ %s", (camel, snake) => {
    expect(snakeCase(camel)).toBe(snake);
    expect(camelCase(snake)).toBe(camel);
  });

  it("converts nested requests deeply, arrays included, and leaves values alone", () => {
    const req = {
      apiConfiguration: {
        openAiBaseUrl: "http://x/v1",
        openAiHeaders: [{ key: "X-Trace", value: "someValue" }],
        actModeOpenAiModelInfo: { contextWindow: 8192 },
      },
      telemetrySetting: "disabled",
    };
    expect(toSnakeKeys(req)).toEqual({
      api_configuration: {
        open_ai_base_url: "http://x/v1",
        open_ai_headers: [{ key: "X-Trace", value: "someValue" }],
        act_mode_open_ai_model_info: { context_window: 8192 },
      },
      telemetry_setting: "disabled",
    });
    expect(toCamelKeys(toSnakeKeys(req))).toEqual(req);
  });

  it("keeps Buffers, nulls and class instances intact", () => {
    const buf = Buffer.from("x");
    const date = new Date(0);
    const out = toCamelKeys({ some_buf: buf, some_null: null, when_at: date }) as Record<string, unknown>;
    expect(out["someBuf"]).toBe(buf);
    expect(out["someNull"]).toBeNull();
    expect(out["whenAt"]).toBe(date);
  });
});
