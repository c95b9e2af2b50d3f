import { describe, expect, it } from "vitest";
import { asIntArrayJson, parseChunkLiftingPromptIds } from "../../src/policy/prompt-ids-json.js";

describe("asIntArrayJson", () => {
  it("takes a compact array of non-negative integers as JSON.stringify writes it", () => {
    expect(asIntArrayJson("[1,20,0,300]")).toBe("[1,20,0,300]");
    expect(asIntArrayJson(JSON.stringify([0]))).toBe("[0]");
  });

  it("refuses anything else: empty, spaces, signs, fractions, leading zeros, too many digits, stray commas", () => {
    for (const bad of [
      "[]",
      "[1, 2]",
      "[-1]",
      "[1.5]",
      "[01]",
      "[1,,2]",
      "[1,]",
      "[,1]",
      "1,2",
      '["1"]',
      "[1e3]",
      `[${"9".repeat(16)}]`,
    ])
      expect(asIntArrayJson(bad), bad).toBeUndefined();
    expect(asIntArrayJson(`[${"9".repeat(15)}]`)).toBeDefined();
  });
});

describe("parseChunkLiftingPromptIds", () => {
  const ids = Array.from({ length: 1000 }, (_, i) => (i * 7919) % 151_000);
  const chunk = {
    id: "c1",
    model: "m",
    prompt_token_ids: ids,
    choices: [{ index: 0, delta: { content: "" } }],
  };

  it("parses the chunk without the top-level ids, and hands the ids back as the server's text", () => {
    const r = parseChunkLiftingPromptIds(JSON.stringify(chunk))!;
    expect(r.chunk).toEqual({ id: "c1", model: "m", choices: chunk.choices });
    expect(JSON.parse(r.promptIds)).toEqual(ids);
  });

  it("leaves the key alone inside a string (the model's text), nested, or duplicated after it", () => {
    const inText = { id: "c", choices: [{ delta: { content: '{"prompt_token_ids":[1,2]}' } }] };
    expect(parseChunkLiftingPromptIds(JSON.stringify(inText))).toBeUndefined();
    const nested = { id: "c", choices: [{ index: 0, prompt_token_ids: [1, 2] }] };
    expect(parseChunkLiftingPromptIds(JSON.stringify(nested))).toBeUndefined();
    // a text holding the key first (escaped quotes: never the key's exact text), the member after
    const both = `{"choices":[{"delta":{"content":"\\"prompt_token_ids\\":[7]"}}],"prompt_token_ids":[1,2]}`;
    const r = parseChunkLiftingPromptIds(both)!;
    expect(r.promptIds).toBe("[1,2]");
    expect(r.chunk).toEqual({ choices: [{ delta: { content: '"prompt_token_ids":[7]' } }] });
    // JSON's own rule for duplicate members: the last one counts
    expect(parseChunkLiftingPromptIds('{"prompt_token_ids":[1],"prompt_token_ids":[2]}')).toBeUndefined();
  });

  it("leaves ids that are not plain integers to the usual parse, and throws on invalid JSON", () => {
    expect(parseChunkLiftingPromptIds('{"prompt_token_ids":[1,-2]}')).toBeUndefined();
    expect(parseChunkLiftingPromptIds('{"id":"x"}')).toBeUndefined();
    expect(() => parseChunkLiftingPromptIds('{"prompt_token_ids":[1,2],')).toThrow();
  });
});
