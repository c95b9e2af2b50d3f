import type { FinishReason, UpstreamEvent, Usage } from "./chat.js";
import { httpPost, type PostResponse } from "./http-post.js";
import { patchJsonObject } from "./json-object-patch.js";
import { DEFAULT_MAX_RESPONSE_BYTES, limitResponse } from "./limit-response.js";
import { type IntArrayJson, parseChunkLiftingPromptIds } from "./prompt-ids-json.js";
import { postHonouringRetryAfter } from "./retry-after.js";
import { openAiSamplingMembers } from "./sampling.js";
import { parseSse } from "./sse.js";
import { streamEndProblem } from "./stream-end.js";
import type { PolicyUpstream, PortableUpstream, UpstreamCall } from "./upstream.js";
import { UpstreamError } from "./upstream.js";

/**
 * Request parameters that make an inference server return the sampled token ids and their
 * logprobs. vLLM: `logprobs` + `top_logprobs: 0` give one logprob per sampled token,
 * `return_tokens_as_token_ids` spells each token as `token_id:<id>`, and `return_token_ids` adds
 * `prompt_token_ids` (first chunk) and per-chunk `token_ids`. sglang's chat endpoint accepts
 * `logprobs`/`top_logprobs` too (tokens come back as text, so ids stay unknown when streaming).
 * Hosted APIs may reject the vLLM extras: then the call is retried once without any of them and the
 * upstream remembers not to send them again.
 */
export const TOKEN_FACT_PARAMS: Readonly<Record<string, unknown>> = {
  logprobs: true,
  top_logprobs: 0,
  return_tokens_as_token_ids: true,
  return_token_ids: true,
};

export interface OpenAiUpstreamOptions {
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey?: string;
  /** Ask for token ids + logprobs (default true). */
  readonly tokenFacts?: boolean;
}

export class OpenAiUpstream implements PolicyUpstream {
  readonly kind = "openai" as const;
  readonly forwardsClientJson = true;
  readonly id: string;
  readonly secrets: readonly string[];
  /** Set once the server refused the token-fact parameters; they are not sent again. */
  tokenFactsRefused: string | undefined;
  /**
   * Set once the server answered a call that carried them: a later 400 is that call's own error (a
   * context-length refusal, a one-off fault), never a refusal of the parameters — else one bad call
   * would strip the token ids from every call after it.
   */
  tokenFactsAccepted = false;
  readonly portable: PortableUpstream;
  private readonly url: string;

  constructor(private readonly opts: OpenAiUpstreamOptions) {
    this.id = `openai:${opts.baseUrl}#${opts.model}`;
    this.portable = { kind: "openai", options: opts };
    this.secrets = opts.apiKey ? [opts.apiKey] : [];
    this.url = `${opts.baseUrl.replace(/\/+$/, "")}/chat/completions`;
    if (opts.tokenFacts === false) this.tokenFactsRefused = "disabled by option";
  }

  async *complete(call: UpstreamCall, signal: AbortSignal): AsyncGenerator<UpstreamEvent> {
    const set: Record<string, unknown> = {
      model: this.opts.model,
      stream: true,
      stream_options: { include_usage: true },
      // the policy's sampling replaces the client's (Cline always asks for temperature 0)
      ...(call.sampling ? openAiSamplingMembers(call.sampling) : {}),
    };
    // the client's own bytes with these members set when the gateway has them (no re-serialization
    // of the conversation), else the request serialized
    const body = (extra: Readonly<Record<string, unknown>>): string | Buffer =>
      (call.protocol === "openai" && call.rawJson && patchJsonObject(call.rawJson, { ...set, ...extra })) ||
      JSON.stringify({
        ...(call.protocol === "openai" ? call.raw : (call.request as Record<string, unknown>)),
        ...set,
        ...extra,
      });
    // every answer (a refusal's body included) is read only up to the call's response size limit
    const max = call.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    const post = async (b: string | Buffer) =>
      limitResponse(await this.post(b, signal, call.deadlineAt), max, this.id);
    let res: PostResponse;
    if (this.tokenFactsRefused === undefined) {
      res = await post(body(TOKEN_FACT_PARAMS));
      if (res.ok) this.tokenFactsAccepted = true;
      else if ((res.status === 400 || res.status === 422) && !this.tokenFactsAccepted) {
        const refusal = `${res.status}: ${(await safeText(res)).slice(0, 300)}`;
        res = await post(body({}));
        if (res.ok) this.tokenFactsRefused = refusal;
      }
    } else {
      res = await post(body({}));
    }
    if (!res.ok) {
      const body = await safeText(res);
      throw new UpstreamError(`${this.id} answered HTTP ${res.status}: ${body.slice(0, 2000)}`, res.status, {
        body,
      });
    }
    const type = String(res.headers["content-type"] ?? "");
    if (type.includes("application/json")) {
      yield* openAiResponseToEvents(jsonAnswerOf(this.id, await res.text()));
      return;
    }
    const state: ChunkState = { started: false };
    let finished = false;
    for await (const ev of parseSse(res.body)) {
      // read on to the end of the body (not break) so the keep-alive socket can be reused
      if (ev.data === "[DONE]") {
        finished = true;
        continue;
      }
      let chunk: Record<string, unknown>;
      let lifted: ReturnType<typeof parseChunkLiftingPromptIds>;
      try {
        // the first chunk's prompt ids go to the turn log as the server wrote them (not parsed)
        lifted = state.started ? undefined : parseChunkLiftingPromptIds(ev.data);
        chunk = lifted?.chunk ?? (JSON.parse(ev.data) as Record<string, unknown>);
      } catch (err) {
        throw new UpstreamError(
          `${this.id} sent an SSE event that is not JSON: ${ev.data.slice(0, 200)}`,
          502,
          {
            cause: err,
          },
        );
      }
      if (chunk["error"] !== undefined) {
        throw new UpstreamError(`${this.id} streamed an error: ${JSON.stringify(chunk["error"])}`, 502);
      }
      for (const e of openAiChunkToEvents(chunk, state, lifted?.promptIds)) {
        if (e.type === "finish") finished = true;
        yield e;
      }
    }
    const problem = streamEndProblem(this.id, { started: state.started, finished });
    if (problem) throw problem;
  }

  private async post(body: string | Buffer, signal: AbortSignal, deadlineAt?: number): Promise<PostResponse> {
    const headers: Record<string, string> = {
      "content-type": "application/json",
      accept: "text/event-stream",
    };
    if (this.opts.apiKey) headers["authorization"] = `Bearer ${this.opts.apiKey}`;
    try {
      return await postHonouringRetryAfter(
        () => httpPost(this.url, headers, body, signal),
        signal,
        deadlineAt,
      );
    } catch (err) {
      if (signal.aborted) throw err;
      throw new UpstreamError(`${this.id} could not be reached: ${(err as Error).message}`, 502, {
        cause: err,
      });
    }
  }
}

async function safeText(res: PostResponse): Promise<string> {
  try {
    return await res.text();
  } catch {
    return "";
  }
}

interface ChunkState {
  started: boolean;
}

const asRecord = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** `v` as an array of integers, or undefined (a plain loop: prompt ids run to tens of thousands). */
function intArray(v: unknown): number[] | undefined {
  if (!Array.isArray(v)) return undefined;
  for (let i = 0; i < v.length; i++) if (!Number.isInteger(v[i])) return undefined;
  return v as number[];
}

export function finishReasonOf(v: unknown): FinishReason | undefined {
  if (v === null || v === undefined) return undefined;
  if (v === "stop" || v === "length" || v === "tool_calls" || v === "content_filter") return v;
  if (v === "function_call") return "tool_calls";
  if (v === "abort") return "error";
  return "stop";
}

export function usageOf(v: unknown): Usage | undefined {
  const u = asRecord(v);
  if (!u) return undefined;
  const usage: Usage = {
    promptTokens: Number(u["prompt_tokens"] ?? 0) || 0,
    completionTokens: Number(u["completion_tokens"] ?? 0) || 0,
  };
  const cached = asRecord(u["prompt_tokens_details"])?.["cached_tokens"];
  if (typeof cached === "number" && cached > 0) usage.cacheReadTokens = cached;
  return usage;
}

/** Reads `choices[].logprobs.content` (vLLM `token_id:<n>` spellings give the ids). */
function logprobFacts(lp: unknown): { ids?: number[]; logprobs?: number[] } {
  const content = asRecord(lp)?.["content"];
  if (!Array.isArray(content) || content.length === 0) return {};
  const logprobs: number[] = [];
  const ids: number[] = [];
  let allIds = true;
  for (const entry of content) {
    const e = asRecord(entry);
    logprobs.push(typeof e?.["logprob"] === "number" ? (e["logprob"] as number) : Number.NaN);
    const m = typeof e?.["token"] === "string" ? /^token_id:(\d+)$/.exec(e["token"] as string) : null;
    if (m) ids.push(Number(m[1]));
    else allIds = false;
  }
  return allIds ? { ids, logprobs } : { logprobs };
}

/** Turns one chat.completion.chunk into events. */
export function* openAiChunkToEvents(
  chunk: Record<string, unknown>,
  state: ChunkState,
  liftedPromptIds?: IntArrayJson,
): Generator<UpstreamEvent> {
  if (!state.started) {
    state.started = true;
    const start: { type: "start"; upstreamRequestId?: string; model?: string } = { type: "start" };
    if (typeof chunk["id"] === "string") start.upstreamRequestId = chunk["id"];
    if (typeof chunk["model"] === "string") start.model = chunk["model"];
    yield start;
  }
  const promptIds = liftedPromptIds ?? intArray(chunk["prompt_token_ids"]);
  if (promptIds) yield { type: "prompt_tokens", ids: promptIds };
  const choices = Array.isArray(chunk["choices"]) ? chunk["choices"] : [];
  for (const c of choices) {
    const choice = asRecord(c);
    if (!choice || (choice["index"] !== undefined && choice["index"] !== 0)) continue;
    const cPrompt = intArray(choice["prompt_token_ids"]);
    if (cPrompt && !promptIds) yield { type: "prompt_tokens", ids: cPrompt };
    const delta = asRecord(choice["delta"]) ?? asRecord(choice["message"]) ?? {};
    const reasoning = delta["reasoning_content"] ?? delta["reasoning"];
    if (typeof reasoning === "string" && reasoning.length > 0) yield { type: "reasoning", text: reasoning };
    if (typeof delta["content"] === "string" && delta["content"].length > 0) {
      yield { type: "text", text: delta["content"] };
    }
    if (Array.isArray(delta["tool_calls"])) {
      for (const [i, t] of delta["tool_calls"].entries()) {
        const tc = asRecord(t);
        if (!tc) continue;
        const fn = asRecord(tc["function"]) ?? {};
        const ev: { type: "tool_call"; index: number; id?: string; name?: string; arguments: string } = {
          type: "tool_call",
          index: typeof tc["index"] === "number" ? tc["index"] : i,
          arguments: typeof fn["arguments"] === "string" ? fn["arguments"] : "",
        };
        if (typeof tc["id"] === "string" && tc["id"]) ev.id = tc["id"];
        if (typeof fn["name"] === "string" && fn["name"]) ev.name = fn["name"];
        yield ev;
      }
    }
    const facts = logprobFacts(choice["logprobs"]);
    const tokenIds = intArray(choice["token_ids"]);
    const ids = facts.ids ?? tokenIds;
    if (ids || facts.logprobs) {
      const ev: { type: "tokens"; ids?: number[]; logprobs?: number[] } = { type: "tokens" };
      if (ids) ev.ids = ids;
      if (facts.logprobs) ev.logprobs = facts.logprobs;
      yield ev;
    }
    const fr = finishReasonOf(choice["finish_reason"]);
    if (fr) yield { type: "finish", reason: fr };
  }
  const usage = usageOf(chunk["usage"]);
  if (usage) yield { type: "usage", usage };
}

/** A non-streamed chat.completion as events (servers that ignore `stream`). */
/**
 * A non-streamed answer's body as JSON: one that is cut or not JSON (or not an object) is the
 * policy server's fault, an UpstreamError naming it — never a "gateway fault". Pure.
 */
export function jsonAnswerOf(who: string, text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (err) {
    throw new UpstreamError(
      `${who} sent an application/json answer that is not JSON (${(err as Error).message}): ${text.slice(0, 200)}`,
      502,
      { cause: err },
    );
  }
  if (v === null || typeof v !== "object" || Array.isArray(v))
    throw new UpstreamError(`${who} sent a JSON answer that is not an object: ${text.slice(0, 200)}`, 502);
  return v as Record<string, unknown>;
}

export function* openAiResponseToEvents(body: Record<string, unknown>): Generator<UpstreamEvent> {
  yield* openAiChunkToEvents(body, { started: false });
}
