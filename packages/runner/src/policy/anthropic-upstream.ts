import { chatRequestToAnthropic } from "./anthropic-convert.js";
import type { FinishReason, UpstreamEvent, Usage } from "./chat.js";
import { httpPost, type PostResponse } from "./http-post.js";
import { DEFAULT_MAX_RESPONSE_BYTES, limitResponse } from "./limit-response.js";
import { postHonouringRetryAfter } from "./retry-after.js";
import { anthropicSamplingMembers } from "./sampling.js";
import { parseSse } from "./sse.js";
import { streamEndProblem } from "./stream-end.js";
import type { PolicyUpstream, PortableUpstream, UpstreamCall } from "./upstream.js";
import { UpstreamError } from "./upstream.js";

export const ANTHROPIC_VERSION = "2023-06-01";

export interface AnthropicUpstreamOptions {
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey?: string;
}

type Json = Record<string, unknown>;
const rec = (v: unknown): Json | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Json) : undefined;

export function anthropicStopReason(v: unknown): FinishReason | undefined {
  if (v === null || v === undefined) return undefined;
  if (v === "max_tokens") return "length";
  if (v === "tool_use") return "tool_calls";
  if (v === "refusal") return "content_filter";
  return "stop";
}

/** An Anthropic-compatible `/v1/messages` server. */
export class AnthropicUpstream implements PolicyUpstream {
  readonly kind = "anthropic" as const;
  readonly id: string;
  readonly secrets: readonly string[];
  readonly portable: PortableUpstream;
  private readonly url: string;

  constructor(private readonly opts: AnthropicUpstreamOptions) {
    this.id = `anthropic:${opts.baseUrl}#${opts.model}`;
    this.portable = { kind: "anthropic", options: opts };
    this.secrets = opts.apiKey ? [opts.apiKey] : [];
    this.url = `${opts.baseUrl.replace(/\/+$/, "")}/v1/messages`;
  }

  async *complete(call: UpstreamCall, signal: AbortSignal): AsyncGenerator<UpstreamEvent> {
    const base: Json =
      call.protocol === "anthropic"
        ? { ...call.raw, model: this.opts.model, stream: true }
        : chatRequestToAnthropic(call.request, this.opts.model);
    // the policy's sampling replaces the client's (Cline always asks for temperature 0)
    const body: Json = call.sampling ? { ...base, ...anthropicSamplingMembers(call.sampling) } : base;
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "anthropic-version": ANTHROPIC_VERSION,
      accept: "text/event-stream",
    };
    if (this.opts.apiKey) headers["x-api-key"] = this.opts.apiKey;
    let res: PostResponse;
    try {
      const payload = JSON.stringify(body);
      res = await postHonouringRetryAfter(
        () => httpPost(this.url, headers, payload, signal),
        signal,
        call.deadlineAt,
      );
    } catch (err) {
      if (signal.aborted) throw err;
      throw new UpstreamError(`${this.id} could not be reached: ${(err as Error).message}`, 502, {
        cause: err,
      });
    }
    res = limitResponse(res, call.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES, this.id);
    if (!res.ok) {
      const text = await res.text().catch(() => "");
      throw new UpstreamError(
        `${this.id} answered HTTP ${res.status}: ${text.slice(0, 2000)}`,
        res.status || 502,
        {
          body: text,
        },
      );
    }
    yield* anthropicStreamToEvents(parseSse(res.body), this.id);
  }
}

/** Anthropic stream events → canonical events. */
export async function* anthropicStreamToEvents(
  events: AsyncIterable<{ event?: string; data: string }>,
  upstreamId: string,
): AsyncGenerator<UpstreamEvent> {
  const toolIndexOfBlock = new Map<number, number>();
  const usage: Usage = { promptTokens: 0, completionTokens: 0 };
  let sawUsage = false;
  let started = false;
  let finished = false;
  for await (const ev of events) {
    let data: Json;
    try {
      data = JSON.parse(ev.data) as Json;
    } catch (err) {
      throw new UpstreamError(
        `${upstreamId} sent an SSE event that is not JSON: ${ev.data.slice(0, 200)}`,
        502,
        {
          cause: err,
        },
      );
    }
    const type = data["type"] ?? ev.event;
    if (type === "message_stop") finished = true;
    if (type === "error") {
      throw new UpstreamError(`${upstreamId} streamed an error: ${JSON.stringify(data["error"])}`, 502);
    }
    if (type === "message_start") {
      started = true;
      const msg = rec(data["message"]) ?? {};
      const u = rec(msg["usage"]) ?? {};
      usage.promptTokens = Number(u["input_tokens"] ?? 0) || 0;
      if (typeof u["cache_read_input_tokens"] === "number")
        usage.cacheReadTokens = u["cache_read_input_tokens"];
      if (typeof u["cache_creation_input_tokens"] === "number")
        usage.cacheWriteTokens = u["cache_creation_input_tokens"];
      sawUsage = true;
      const start: { type: "start"; upstreamRequestId?: string; model?: string } = { type: "start" };
      if (typeof msg["id"] === "string") start.upstreamRequestId = msg["id"];
      if (typeof msg["model"] === "string") start.model = msg["model"];
      yield start;
      // known before any content: lets the gateway tell an Anthropic client in message_start
      yield { type: "usage", usage: { ...usage } };
    } else if (type === "content_block_start") {
      const block = rec(data["content_block"]) ?? {};
      const index = Number(data["index"] ?? 0);
      if (block["type"] === "tool_use") {
        const toolIndex = toolIndexOfBlock.size;
        toolIndexOfBlock.set(index, toolIndex);
        yield {
          type: "tool_call",
          index: toolIndex,
          id: String(block["id"] ?? `call_${toolIndex}`),
          name: String(block["name"] ?? ""),
          arguments: "",
        };
      } else if (block["type"] === "text" && typeof block["text"] === "string" && block["text"]) {
        yield { type: "text", text: block["text"] };
      }
    } else if (type === "content_block_delta") {
      const delta = rec(data["delta"]) ?? {};
      const index = Number(data["index"] ?? 0);
      if (delta["type"] === "text_delta") yield { type: "text", text: String(delta["text"] ?? "") };
      else if (delta["type"] === "thinking_delta")
        yield { type: "reasoning", text: String(delta["thinking"] ?? "") };
      else if (delta["type"] === "input_json_delta") {
        yield {
          type: "tool_call",
          index: toolIndexOfBlock.get(index) ?? 0,
          arguments: String(delta["partial_json"] ?? ""),
        };
      }
    } else if (type === "message_delta") {
      const delta = rec(data["delta"]) ?? {};
      const u = rec(data["usage"]) ?? {};
      if (typeof u["output_tokens"] === "number") usage.completionTokens = u["output_tokens"];
      if (typeof u["input_tokens"] === "number" && u["input_tokens"] > 0)
        usage.promptTokens = u["input_tokens"];
      sawUsage = true;
      const fr = anthropicStopReason(delta["stop_reason"]);
      if (fr) {
        finished = true;
        yield { type: "finish", reason: fr };
      }
    }
  }
  if (sawUsage) yield { type: "usage", usage: { ...usage } };
  const problem = streamEndProblem(upstreamId, { started, finished });
  if (problem) throw problem;
}
