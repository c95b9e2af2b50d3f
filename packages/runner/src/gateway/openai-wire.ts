import type { CompletedResponse, UpstreamEvent, Usage } from "../policy/chat.js";

/** Encodes canonical events as an OpenAI chat.completion.chunk SSE stream. */
export class OpenAiStreamEncoder {
  private started = false;
  private usage: Usage | undefined;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(
    private readonly id: string,
    private readonly model: string,
    private readonly includeUsage: boolean,
  ) {}

  private chunk(choices: unknown[], extra: Record<string, unknown> = {}): string {
    const body = {
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      choices,
      ...extra,
    };
    return `data: ${JSON.stringify(body)}\n\n`;
  }

  private delta(delta: Record<string, unknown>, finish: string | null = null): string {
    return this.chunk([{ index: 0, delta, logprobs: null, finish_reason: finish }]);
  }

  /** The SSE text for one event ("" when the event is not sent to clients). */
  encode(ev: UpstreamEvent): string {
    let out = "";
    if (!this.started && ev.type !== "usage" && ev.type !== "tokens" && ev.type !== "prompt_tokens") {
      this.started = true;
      out += this.delta({ role: "assistant", content: "" });
    }
    switch (ev.type) {
      case "text":
        return out + this.delta({ content: ev.text });
      case "reasoning":
        return out + this.delta({ reasoning_content: ev.text });
      case "tool_call": {
        const fn: Record<string, unknown> = { arguments: ev.arguments };
        if (ev.name) fn["name"] = ev.name;
        const call: Record<string, unknown> = { index: ev.index, function: fn };
        if (ev.id) {
          call["id"] = ev.id;
          call["type"] = "function";
        }
        return out + this.delta({ tool_calls: [call] });
      }
      case "finish":
        return out + this.delta({}, ev.reason === "error" ? "stop" : ev.reason);
      case "usage":
        this.usage = ev.usage;
        return out;
      default:
        return out;
    }
  }

  /** The closing text: the usage chunk (when asked for) and `[DONE]`. */
  end(): string {
    let out = "";
    if (!this.started) {
      this.started = true;
      out += this.delta({ role: "assistant", content: "" });
    }
    if (this.includeUsage && this.usage) out += this.chunk([], { usage: openAiUsage(this.usage) });
    return `${out}data: [DONE]\n\n`;
  }
}

export function openAiUsage(u: Usage): Record<string, unknown> {
  const out: Record<string, unknown> = {
    prompt_tokens: u.promptTokens,
    completion_tokens: u.completionTokens,
    total_tokens: u.promptTokens + u.completionTokens,
  };
  if (u.cacheReadTokens) out["prompt_tokens_details"] = { cached_tokens: u.cacheReadTokens };
  return out;
}

/** A whole (non-streamed) chat.completion body. */
export function openAiCompletionBody(
  id: string,
  model: string,
  r: CompletedResponse,
): Record<string, unknown> {
  const message: Record<string, unknown> = { role: "assistant", content: r.text.length > 0 ? r.text : null };
  if (r.reasoning) message["reasoning_content"] = r.reasoning;
  if (r.toolCalls.length > 0) {
    message["tool_calls"] = r.toolCalls.map((c) => ({
      id: c.id,
      type: "function",
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  const body: Record<string, unknown> = {
    id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: r.finishReason ?? "stop" }],
  };
  if (r.usage) body["usage"] = openAiUsage(r.usage);
  return body;
}

/** An OpenAI-style error body. */
export function openAiErrorBody(message: string, type: string, code?: string): Record<string, unknown> {
  return { error: { message, type, code: code ?? type, param: null } };
}
