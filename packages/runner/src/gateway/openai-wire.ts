import type { CompletedResponse, UpstreamEvent, Usage } from "../policy/chat.js";

/**
 * Encodes canonical events as an OpenAI chat.completion.chunk SSE stream. Text deltas, the common
 * case, are written from a prefix serialized once per stream; the output is byte for byte what
 * `JSON.stringify` of the whole chunk gives.
 */
export class OpenAiStreamEncoder {
  private started = false;
  private usage: Usage | undefined;
  private readonly created = Math.floor(Date.now() / 1000);
  /** `data: {"id":…,"object":…,"created":…,"model":…,"choices":` */
  private readonly head: string;

  constructor(
    private readonly id: string,
    private readonly model: string,
    private readonly includeUsage: boolean,
  ) {
    const envelope = JSON.stringify({
      id: this.id,
      object: "chat.completion.chunk",
      created: this.created,
      model: this.model,
      choices: [],
    });
    this.head = `data: ${envelope.slice(0, -3)}`;
  }

  private chunk(choices: unknown[], extra?: Record<string, unknown>): string {
    let out = `${this.head}${JSON.stringify(choices)}`;
    if (extra)
      for (const [k, v] of Object.entries(extra)) out += `,${JSON.stringify(k)}:${JSON.stringify(v)}`;
    return `${out}}\n\n`;
  }

  private delta(delta: Record<string, unknown>, finish: string | null = null): string {
    return this.chunk([{ index: 0, delta, logprobs: null, finish_reason: finish }]);
  }

  /** A `content` or `reasoning_content` delta. */
  private textDelta(key: "content" | "reasoning_content", text: string): string {
    return `${this.head}[{"index":0,"delta":{"${key}":${JSON.stringify(text)}},"logprobs":null,"finish_reason":null}]}\n\n`;
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
        return out + this.textDelta("content", ev.text);
      case "reasoning":
        return out + this.textDelta("reasoning_content", ev.text);
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
