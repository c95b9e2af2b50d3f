import { describe, expect, it } from "vitest";
import { OpenAiStreamEncoder } from "../../src/gateway/openai-wire.js";
import type { UpstreamEvent } from "../../src/policy/chat.js";

/** The chunk as JSON.stringify writes it: what the templated encoder must reproduce byte for byte. */
function reference(
  id: string,
  model: string,
  created: number,
  choices: unknown[],
  extra: object = {},
): string {
  return `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model, choices, ...extra })}\n\n`;
}
const delta = (d: object, finish: string | null = null) => [
  { index: 0, delta: d, logprobs: null, finish_reason: finish },
];

describe("OpenAiStreamEncoder", () => {
  it("writes each chunk exactly as JSON.stringify of the whole chunk would", () => {
    const id = 'chatcmpl-t"r\\1';
    const model = "qwen/ünï";
    const enc = new OpenAiStreamEncoder(id, model, true);
    const first = enc.encode({ type: "start" });
    const created = Number(/"created":(\d+)/.exec(first)?.[1]);
    expect(Math.abs(created - Date.now() / 1000)).toBeLessThan(5);
    expect(first).toBe(reference(id, model, created, delta({ role: "assistant", content: "" })));
    const events: [UpstreamEvent, string][] = [
      [{ type: "prompt_tokens", ids: [1, 2] }, ""],
      [
        { type: "text", text: 'hé "x"\n\u2028</s>' },
        reference(id, model, created, delta({ content: 'hé "x"\n\u2028</s>' })),
      ],
      [
        { type: "reasoning", text: "think" },
        reference(id, model, created, delta({ reasoning_content: "think" })),
      ],
      [{ type: "tokens", ids: [5], logprobs: [-0.1] }, ""],
      [
        { type: "tool_call", index: 0, id: "c1", name: "f", arguments: "{" },
        reference(
          id,
          model,
          created,
          delta({
            tool_calls: [{ index: 0, function: { arguments: "{", name: "f" }, id: "c1", type: "function" }],
          }),
        ),
      ],
      [{ type: "finish", reason: "tool_calls" }, reference(id, model, created, delta({}, "tool_calls"))],
      [{ type: "usage", usage: { promptTokens: 3, completionTokens: 4 } }, ""],
    ];
    for (const [ev, want] of events) expect(enc.encode(ev)).toBe(want);
    expect(enc.end()).toBe(
      `${reference(id, model, created, [], { usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 } })}data: [DONE]\n\n`,
    );
  });
});
