import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { promptOfRow, promptsOfJsonl } from "../../src/contract/prompts.js";

const SAMPLE = fileURLToPath(
  new URL("../../../../tests/fixtures/swe-agent-13k-sample.jsonl", import.meta.url),
);

describe("promptOfRow: the rows a .jsonl target takes", () => {
  it("takes a prompt field and its answer", () => {
    expect(promptOfRow({ question: "6*7?", answer: "42" })).toEqual({ prompt: "6*7?", answer: "42" });
  });
  it("takes a swe-agent row (rollout --dataset's format): the first human turn, conversations as an array or a JSON string", () => {
    const conversations = [
      { from: "system", value: "sys" },
      { from: "human", value: "Fix the bug." },
    ];
    expect(promptOfRow({ id: "a", conversations })).toEqual({ prompt: "Fix the bug." });
    expect(promptOfRow({ id: "a", conversations: JSON.stringify(conversations) })).toEqual({
      prompt: "Fix the bug.",
    });
    expect(promptOfRow({ id: "a", conversations: "not json" })).toBeUndefined();
    expect(promptOfRow({ id: "a", conversations: [{ from: "gpt", value: "x" }] })).toBeUndefined();
  });
  it("every row of the swe-agent fixture (7 rows, all accepted by tasks check) has a prompt", () => {
    const { rows, rejected } = promptsOfJsonl(readFileSync(SAMPLE, "utf8"));
    expect(rejected).toEqual([]);
    expect(rows).toHaveLength(7);
    expect(rows.every((r) => r.prompt.trim().length > 0)).toBe(true);
  });
});
