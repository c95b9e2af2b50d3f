import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadChatTokenizer } from "../../src/export/tokenizer.js";
import type { ChatMessage, ChatTool } from "../../src/policy/chat.js";
import { GOLDEN_DIR, TOKENIZERS } from "./fixtures.js";

/**
 * The chat templates render as transformers renders them: the goldens were produced by Python
 * jinja2 configured like transformers (tests/fixtures/tokenizers/render_with_jinja2.py) from the
 * cases in template-cases.json; @huggingface/jinja must produce the same text.
 */
const cases = JSON.parse(readFileSync(join(GOLDEN_DIR, "template-cases.json"), "utf8")) as {
  name: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  add_generation_prompt: boolean;
}[];

const loaded = new Map<string, ReturnType<typeof loadChatTokenizer>>();

describe.each(["qwen3", "llama3"] as const)("%s chat template", (family) => {
  const golden = JSON.parse(
    readFileSync(join(GOLDEN_DIR, family, "jinja2-render.golden.json"), "utf8"),
  ) as Record<string, string>;
  it.each(cases.map((c) => [c.name, c] as const))("%s renders as Python jinja2 does", async (_name, c) => {
    if (!loaded.has(family)) loaded.set(family, loadChatTokenizer(TOKENIZERS[family]));
    const tok = await loaded.get(family)!;
    // template messages already carry parsed tool-call arguments; render them as canonical ones
    const messages = c.messages.map((m) => ({
      ...m,
      ...(m.tool_calls
        ? {
            tool_calls: m.tool_calls.map((t) => ({
              ...t,
              function: { ...t.function, arguments: JSON.stringify(t.function.arguments) },
            })),
          }
        : {}),
    }));
    expect(tok.render(messages, { addGenerationPrompt: c.add_generation_prompt, tools: c.tools })).toBe(
      golden[c.name],
    );
  });
});
