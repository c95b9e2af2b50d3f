import { z } from "zod";
import type { IntArrayJson } from "./prompt-ids-json.js";

/**
 * The gateway's canonical chat shapes. Requests are OpenAI chat-completions shaped (that is what
 * chat templates and vLLM consume); Anthropic requests are converted into them at the edge.
 * Responses travel as a stream of {@link UpstreamEvent}s that each wire encoder turns back into the
 * protocol the client spoke.
 */

export const ChatContentPart = z
  .object({
    type: z.string().describe("text | image_url | … (OpenAI content part type)"),
    text: z.string().optional().describe("the text of a text part"),
  })
  .passthrough();
export type ChatContentPart = z.infer<typeof ChatContentPart>;

export const ChatToolCall = z
  .object({
    id: z.string().describe("the call id the tool result refers back to"),
    type: z.literal("function").default("function"),
    function: z.object({
      name: z.string().describe("tool name, e.g. write_to_file"),
      arguments: z.string().describe("the arguments as the model produced them (a JSON string)"),
    }),
  })
  .passthrough();
export type ChatToolCall = z.infer<typeof ChatToolCall>;

export const ChatMessage = z
  .object({
    role: z.enum(["system", "developer", "user", "assistant", "tool"]).describe("message author"),
    content: z
      .union([z.string(), z.array(ChatContentPart), z.null()])
      .optional()
      .describe("text, or a list of content parts"),
    tool_calls: z.array(ChatToolCall).optional().describe("native tool calls of an assistant message"),
    tool_call_id: z.string().optional().describe("for role=tool: the call this result answers"),
    reasoning_content: z.string().optional().describe("reasoning text of an assistant message"),
    name: z.string().optional(),
  })
  .passthrough();
export type ChatMessage = z.infer<typeof ChatMessage>;

export const ChatTool = z
  .object({
    type: z.literal("function"),
    function: z
      .object({
        name: z.string(),
        description: z.string().optional(),
        parameters: z.record(z.string(), z.unknown()).optional(),
      })
      .passthrough(),
  })
  .passthrough();
export type ChatTool = z.infer<typeof ChatTool>;

/** A chat-completions request as the gateway sees it (the system prompt is the first message). */
export const ChatRequest = z
  .object({
    model: z.string().describe("the model id the client asked for"),
    messages: z.array(ChatMessage).min(1).describe("the whole conversation, system prompt first"),
    tools: z.array(ChatTool).optional().describe("native tool definitions (absent in XML mode)"),
    tool_choice: z.unknown().optional(),
    temperature: z.number().nullable().optional(),
    max_tokens: z.number().int().nullable().optional(),
    max_completion_tokens: z.number().int().nullable().optional(),
    stream: z.boolean().optional(),
  })
  .passthrough();
export type ChatRequest = z.infer<typeof ChatRequest>;

export const FinishReason = z.enum(["stop", "length", "tool_calls", "content_filter", "error"]);
export type FinishReason = z.infer<typeof FinishReason>;

export const Usage = z
  .object({
    promptTokens: z.number().int().nonnegative().describe("tokens in the prompt"),
    completionTokens: z.number().int().nonnegative().describe("tokens sampled"),
    cacheReadTokens: z.number().int().nonnegative().optional(),
    cacheWriteTokens: z.number().int().nonnegative().optional(),
  })
  .strict();
export type Usage = z.infer<typeof Usage>;

/** One step of an upstream's answer, in order. Tool call arguments arrive as string deltas. */
export type UpstreamEvent =
  | { readonly type: "start"; readonly upstreamRequestId?: string; readonly model?: string }
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "reasoning"; readonly text: string }
  | {
      readonly type: "tool_call";
      readonly index: number;
      readonly id?: string;
      readonly name?: string;
      readonly arguments: string;
    }
  /** Sampled token ids and/or their logprobs for the text just streamed (same length when both). */
  | { readonly type: "tokens"; readonly ids?: readonly number[]; readonly logprobs?: readonly number[] }
  /** The prompt as the inference server tokenized it (vLLM `return_token_ids`). */
  /**
   * The prompt as the inference server tokenized it (vLLM `return_token_ids`); as the server's JSON
   * text when the upstream lifted it out unparsed (policy/prompt-ids-json.ts).
   */
  | { readonly type: "prompt_tokens"; readonly ids: readonly number[] | IntArrayJson }
  | { readonly type: "usage"; readonly usage: Usage }
  | { readonly type: "finish"; readonly reason: FinishReason };

export const CompletedToolCall = z
  .object({
    id: z.string(),
    name: z.string(),
    arguments: z.string().describe("JSON text as the model produced it"),
  })
  .strict();
export type CompletedToolCall = z.infer<typeof CompletedToolCall>;

/** Token-level facts of one completion; present only when the upstream returned them. */
export const SampledTokens = z
  .object({
    ids: z.array(z.number().int()).optional().describe("sampled token ids, in order"),
    logprobs: z.array(z.number()).optional().describe("logprob of each sampled token"),
    promptIds: z.array(z.number().int()).optional().describe("prompt token ids the server used"),
  })
  .strict();
export type SampledTokens = z.infer<typeof SampledTokens>;

export const CompletedResponse = z
  .object({
    text: z.string().describe("assistant text (XML tool tags included in XML mode)"),
    reasoning: z.string().optional().describe("reasoning text, when the upstream separates it"),
    toolCalls: z.array(CompletedToolCall).describe("native tool calls"),
    finishReason: FinishReason.nullable(),
    usage: Usage.optional(),
    upstreamRequestId: z.string().optional(),
    model: z.string().optional(),
    tokens: SampledTokens.optional(),
  })
  .strict();
export type CompletedResponse = z.infer<typeof CompletedResponse>;

/** Folds an event stream into one {@link CompletedResponse}. */
export class ResponseAccumulator {
  private text = "";
  private reasoning = "";
  private readonly calls: { id: string; name: string; arguments: string }[] = [];
  private finishReason: FinishReason | null = null;
  private usage: Usage | undefined;
  private upstreamRequestId: string | undefined;
  private model: string | undefined;
  private ids: number[] | undefined;
  private logprobs: number[] | undefined;
  private promptIds: number[] | undefined;
  private promptIdsText: IntArrayJson | undefined;
  /** False once a chunk of text arrived without token facts: then ids are partial and dropped. */
  private tokensComplete = true;
  private sawTokens = false;

  add(ev: UpstreamEvent): void {
    switch (ev.type) {
      case "start":
        this.upstreamRequestId = ev.upstreamRequestId ?? this.upstreamRequestId;
        this.model = ev.model ?? this.model;
        break;
      case "text":
        this.text += ev.text;
        break;
      case "reasoning":
        this.reasoning += ev.text;
        break;
      case "tool_call": {
        let call = this.calls[ev.index];
        if (!call) {
          call = { id: ev.id ?? `call_${ev.index}`, name: ev.name ?? "", arguments: "" };
          this.calls[ev.index] = call;
        }
        if (ev.id) call.id = ev.id;
        if (ev.name) call.name = ev.name;
        call.arguments += ev.arguments;
        break;
      }
      case "tokens":
        this.sawTokens = true;
        if (ev.ids) {
          this.ids ??= [];
          for (const id of ev.ids) this.ids.push(id);
        } else this.tokensComplete = false;
        if (ev.logprobs) {
          this.logprobs ??= [];
          for (const lp of ev.logprobs) this.logprobs.push(lp);
        }
        break;
      case "prompt_tokens":
        // tens of thousands of ids: kept as the server's text when lifted, else a flat copy
        if (typeof ev.ids === "string") {
          this.promptIdsText = ev.ids;
          this.promptIds = undefined;
        } else {
          this.promptIds = ev.ids.slice();
          this.promptIdsText = undefined;
        }
        break;
      case "usage":
        this.usage = ev.usage;
        break;
      case "finish":
        this.finishReason = ev.reason;
        break;
    }
  }

  /**
   * The prompt ids as JSON text, when the upstream lifted them out unparsed: then `result()` has no
   * `tokens.promptIds` and the turn log splices this text in its place (gateway/turn-log.ts).
   */
  promptIdsJson(): IntArrayJson | undefined {
    return this.promptIdsText;
  }

  result(): CompletedResponse {
    const tokens: SampledTokens = {};
    if (this.sawTokens && this.tokensComplete && this.ids) {
      tokens.ids = this.ids;
      if (this.logprobs && this.logprobs.length === this.ids.length) tokens.logprobs = this.logprobs;
    }
    if (this.promptIds) tokens.promptIds = this.promptIds;
    const out: CompletedResponse = {
      text: this.text,
      toolCalls: this.calls.filter((c) => c !== undefined),
      finishReason: this.finishReason,
    };
    if (this.reasoning) out.reasoning = this.reasoning;
    if (this.usage) out.usage = this.usage;
    if (this.upstreamRequestId) out.upstreamRequestId = this.upstreamRequestId;
    if (this.model) out.model = this.model;
    if (Object.keys(tokens).length > 0) out.tokens = tokens;
    return out;
  }
}

/** Concatenates the text of a message's content (string or parts). */
export function contentText(content: ChatMessage["content"]): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  return content
    .filter((p) => p.type === "text" && typeof p.text === "string")
    .map((p) => p.text)
    .join("\n");
}
