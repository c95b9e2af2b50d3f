import type { CompletedResponse, FinishReason, UpstreamEvent, Usage } from "../policy/chat.js";
import { encodeSse } from "../policy/sse.js";

const stopReason = (r: FinishReason | null): string =>
  r === "length"
    ? "max_tokens"
    : r === "tool_calls"
      ? "tool_use"
      : r === "content_filter"
        ? "refusal"
        : "end_turn";

function usageBody(u: Usage | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {
    input_tokens: u?.promptTokens ?? 0,
    output_tokens: u?.completionTokens ?? 0,
  };
  if (u?.cacheReadTokens) out["cache_read_input_tokens"] = u.cacheReadTokens;
  if (u?.cacheWriteTokens) out["cache_creation_input_tokens"] = u.cacheWriteTokens;
  return out;
}

/**
 * Encodes canonical events as an Anthropic Messages SSE stream. `message_start` is held back until
 * the first content or usage event so that a usage known up front (Anthropic and scripted
 * upstreams) reaches the client there, where Cline reads the input token count.
 */
export class AnthropicStreamEncoder {
  private started = false;
  private usage: Usage | undefined;
  private finish: FinishReason | null = null;
  /** The open content block: its index and kind. */
  private open: { index: number; kind: "text" | "thinking" | "tool"; toolIndex?: number } | undefined;
  private nextIndex = 0;

  constructor(
    private readonly id: string,
    private readonly model: string,
  ) {}

  private ev(type: string, data: Record<string, unknown>): string {
    return encodeSse({ event: type, data: JSON.stringify({ type, ...data }) });
  }

  private start(): string {
    if (this.started) return "";
    this.started = true;
    return this.ev("message_start", {
      message: {
        id: this.id,
        type: "message",
        role: "assistant",
        model: this.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: usageBody(this.usage ? { ...this.usage, completionTokens: 0 } : undefined),
      },
    });
  }

  private close(): string {
    if (!this.open) return "";
    const out = this.ev("content_block_stop", { index: this.open.index });
    this.open = undefined;
    return out;
  }

  private openBlock(
    kind: "text" | "thinking" | "tool",
    block: Record<string, unknown>,
    toolIndex?: number,
  ): string {
    let out = this.close();
    const index = this.nextIndex++;
    this.open = toolIndex === undefined ? { index, kind } : { index, kind, toolIndex };
    out += this.ev("content_block_start", { index, content_block: block });
    return out;
  }

  encode(ev: UpstreamEvent): string {
    switch (ev.type) {
      case "usage":
        this.usage = ev.usage;
        return "";
      case "start":
      case "tokens":
      case "prompt_tokens":
        return "";
      case "finish":
        this.finish = ev.reason;
        return "";
      case "text": {
        let out = this.start();
        if (this.open?.kind !== "text") out += this.openBlock("text", { type: "text", text: "" });
        return (
          out +
          this.ev("content_block_delta", {
            index: this.open!.index,
            delta: { type: "text_delta", text: ev.text },
          })
        );
      }
      case "reasoning": {
        let out = this.start();
        if (this.open?.kind !== "thinking")
          out += this.openBlock("thinking", { type: "thinking", thinking: "" });
        return (
          out +
          this.ev("content_block_delta", {
            index: this.open!.index,
            delta: { type: "thinking_delta", thinking: ev.text },
          })
        );
      }
      case "tool_call": {
        let out = this.start();
        if (this.open?.kind !== "tool" || this.open.toolIndex !== ev.index) {
          out += this.openBlock(
            "tool",
            { type: "tool_use", id: ev.id ?? `toolu_${ev.index}`, name: ev.name ?? "", input: {} },
            ev.index,
          );
        }
        if (ev.arguments.length === 0) return out;
        return (
          out +
          this.ev("content_block_delta", {
            index: this.open!.index,
            delta: { type: "input_json_delta", partial_json: ev.arguments },
          })
        );
      }
    }
  }

  end(): string {
    let out = this.start();
    out += this.close();
    out += this.ev("message_delta", {
      delta: { stop_reason: stopReason(this.finish), stop_sequence: null },
      usage: usageBody(this.usage),
    });
    out += this.ev("message_stop", {});
    return out;
  }
}

/** A whole (non-streamed) Anthropic message body. */
export function anthropicMessageBody(
  id: string,
  model: string,
  r: CompletedResponse,
): Record<string, unknown> {
  const content: Record<string, unknown>[] = [];
  if (r.reasoning) content.push({ type: "thinking", thinking: r.reasoning, signature: "" });
  if (r.text) content.push({ type: "text", text: r.text });
  for (const c of r.toolCalls) {
    let input: unknown = {};
    try {
      input = JSON.parse(c.arguments || "{}");
    } catch {
      input = {};
    }
    content.push({ type: "tool_use", id: c.id, name: c.name, input });
  }
  return {
    id,
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: stopReason(r.finishReason),
    stop_sequence: null,
    usage: usageBody(r.usage),
  };
}

export function anthropicErrorBody(message: string, type: string): Record<string, unknown> {
  return { type: "error", error: { type, message } };
}
