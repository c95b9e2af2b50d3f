import { once } from "node:events";
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { ChatRequest } from "../policy/chat.js";
import { TOKEN_FACT_PARAMS } from "../policy/openai-upstream.js";
import type { ChatTokenizer } from "./tokenizer.js";

/**
 * An OpenAI-compatible inference server double that answers like vLLM: with a tokenizer it
 * tokenizes the prompt with the chat template (`prompt_token_ids` in the first chunk), samples
 * "tokens" by encoding the scripted reply (plus the EOS token, as vLLM reports it) and streams
 * per-chunk `token_ids` and `logprobs.content` entries spelled `token_id:<id>`. Replies can also
 * fail with a status or hang, to exercise the gateway's watchdog. For tests and benchmarks; it is a
 * double of the server, not of the model.
 */

export type DoubleReply =
  | {
      readonly text?: string;
      readonly toolCalls?: readonly { name: string; arguments: string }[];
      /** Usage to report instead of the real counts (a near-full context makes Cline truncate). */
      readonly usage?: { readonly prompt_tokens: number; readonly completion_tokens: number };
    }
  | { readonly fail: { readonly status: number; readonly message: string } }
  /** Never answers; with `afterText`, starts a 200 SSE stream, sends it in one chunk, then goes silent. */
  | { readonly hang: true; readonly afterText?: string }
  /** Starts a 200 SSE stream, sends `text` in one chunk, then cuts the connection (no finish, no [DONE]). */
  | { readonly brokenStream: { readonly text: string } };

export interface InferenceServerDoubleOptions {
  /** The reply to call `n` (1-based). */
  readonly reply: (req: ChatRequest, n: number) => DoubleReply | Promise<DoubleReply>;
  /** Enables vLLM-style token facts. */
  readonly tokenizer?: ChatTokenizer;
  /** Refuse vLLM's extra parameters with 400, like a hosted API (default false). */
  readonly refuseTokenFactParams?: boolean;
  /** Tokens (or characters, without a tokenizer) per streamed chunk (default 4). */
  readonly chunk?: number;
  /** Pause between streamed chunks, like a model sampling (default 0: as fast as possible). */
  readonly intervalMs?: number;
}

export interface InferenceServerDouble {
  /** Base URL ending in /v1. */
  readonly baseUrl: string;
  /** Every request body received, in order. */
  readonly requests: Record<string, unknown>[];
  /** The headers of every request, in order. */
  readonly headers: IncomingHttpHeaders[];
  close(): Promise<void>;
}

/** Deterministic stand-in logprob for a sampled id. */
export const doubleLogprob = (id: number, position: number) => -(((id * 31 + position) % 97) + 1) / 100;

/** The double's state: its options and everything it has received. */
interface DoubleState {
  readonly opts: InferenceServerDoubleOptions;
  readonly requests: Record<string, unknown>[];
  readonly headers: IncomingHttpHeaders[];
  /** Responses that never end on their own (`hang`), destroyed on close. */
  readonly hanging: Set<ServerResponse>;
  /** Chat calls answered so far. */
  calls: number;
}

/** A request the double is answering: its parsed body and where the answer goes. */
interface Exchange {
  readonly state: DoubleState;
  readonly body: Record<string, unknown>;
  readonly res: ServerResponse;
}

/** The double's routes: request path → handler. */
const ROUTES: Readonly<Record<string, (x: Exchange) => Promise<void>>> = {
  "/v1/chat/completions": chatCompletions,
};

export async function startInferenceServerDouble(
  opts: InferenceServerDoubleOptions,
): Promise<InferenceServerDouble> {
  const state: DoubleState = { opts, requests: [], headers: [], hanging: new Set(), calls: 0 };
  const server: Server = createServer((req, res) => {
    handle(state, req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(JSON.stringify({ error: { message: String(err) } }));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests: state.requests,
    headers: state.headers,
    close: async () => {
      for (const r of state.hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** Records the request (body and headers) and answers it by its route, or 404. */
async function handle(state: DoubleState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
  const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
  state.requests.push(body);
  state.headers.push(req.headers);
  const route = ROUTES[req.url ?? ""];
  if (route === undefined) {
    res.writeHead(404).end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
    return;
  }
  await route({ state, body, res });
}

/** POST /v1/chat/completions: refuses vLLM's parameters when asked to, else answers with the scripted reply. */
async function chatCompletions(x: Exchange): Promise<void> {
  const { state, body, res } = x;
  const extra = refusedParam(body, state.opts.refuseTokenFactParams === true);
  if (extra !== undefined) {
    res.writeHead(400, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `Unrecognized request argument supplied: ${extra}` } }));
    return;
  }
  const request = ChatRequest.parse(body);
  const n = ++state.calls;
  const reply = await state.opts.reply(request, n);
  if ("fail" in reply) {
    res.writeHead(reply.fail.status, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: reply.fail.message, type: "server_error" } }));
  } else if ("hang" in reply) hang(x, n, reply.afterText);
  else if ("brokenStream" in reply) await brokenStream(res, n, reply.brokenStream.text);
  else await streamReply(x, request, n, reply);
}

/** The vLLM parameter a hosted-API double refuses (the first `return_*` one in the body), if any. Pure. */
export function refusedParam(body: Record<string, unknown>, refuse: boolean): string | undefined {
  if (!refuse) return undefined;
  return Object.keys(TOKEN_FACT_PARAMS).find((k) => k.startsWith("return_") && k in body);
}

/** One SSE `data:` event of a chat completion chunk. Pure. */
export function sseChunk(id: string, model: string, payload: Record<string, unknown>): string {
  return `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model, ...payload })}\n\n`;
}

/** The one chunk a hanging or broken stream sends: the assistant's text so far. Pure. */
function firstTextChunk(n: number, text: string): string {
  const delta = { role: "assistant", content: text };
  return sseChunk(`chatcmpl-double-${n}`, "double", { choices: [{ index: 0, delta, finish_reason: null }] });
}

/** Never answers; with `afterText`, starts the stream and sends it first. Destroyed on close. */
function hang(x: Exchange, n: number, afterText: string | undefined): void {
  const { res, state } = x;
  state.hanging.add(res);
  res.on("close", () => state.hanging.delete(res));
  if (afterText === undefined) return;
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.write(firstTextChunk(n, afterText));
}

/** Starts the stream, sends `text`, then cuts the connection (no finish, no [DONE]). */
async function brokenStream(res: ServerResponse, n: number, text: string): Promise<void> {
  res.writeHead(200, { "content-type": "text/event-stream" });
  res.write(firstTextChunk(n, text));
  await new Promise((r) => setTimeout(r, 20));
  res.destroy();
}

type TextReply = Extract<DoubleReply, { text?: string }>;

/** Streams a scripted answer the way vLLM does: role chunk, content chunks, tool calls, finish, usage, [DONE]. */
async function streamReply(x: Exchange, request: ChatRequest, n: number, reply: TextReply): Promise<void> {
  const { body, res, state } = x;
  const { tokenizer: tok, chunk = 4, intervalMs: pace = 0 } = state.opts;
  const id = `chatcmpl-double-${n}`;
  const model = String(body["model"] ?? "double");
  const send = async (payload: Record<string, unknown>) => {
    if (pace > 0) await new Promise((r) => setTimeout(r, pace));
    res.write(sseChunk(id, model, payload));
  };
  const text = reply.text ?? "";
  const calls = reply.toolCalls ?? [];
  res.writeHead(200, { "content-type": "text/event-stream" });
  const promptIds = tok?.apply(request.messages, { addGenerationPrompt: true, tools: request.tools });
  await send({
    choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
    ...(tok && body["return_token_ids"] === true ? { prompt_token_ids: promptIds } : {}),
  });
  const content = tok
    ? tokenChoices(tok, text, calls.length === 0, chunk, {
        logprobs: body["logprobs"] === true && body["return_tokens_as_token_ids"] === true,
        tokenIds: body["return_token_ids"] === true,
      })
    : textChoices(text, chunk);
  for (const choice of content.choices) await send({ choices: [choice] });
  for (const choice of toolCallChoices(calls, n)) await send({ choices: [choice] });
  await send({ choices: [{ index: 0, delta: {}, finish_reason: calls.length > 0 ? "tool_calls" : "stop" }] });
  if ((body["stream_options"] as { include_usage?: boolean } | undefined)?.include_usage) {
    const promptTokens = promptIds?.length ?? Math.ceil(JSON.stringify(request.messages).length / 4);
    const usage = reply.usage ?? { prompt_tokens: promptTokens, completion_tokens: content.completionTokens };
    await send({
      choices: [],
      usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
    });
  }
  res.end("data: [DONE]\n\n");
}

/**
 * The content chunks of `text` sampled as tokens: `chunk` ids each (plus EOS when the answer ends
 * without tool calls), each delta the newly decoded text, with vLLM's `token_id:<id>` logprobs and
 * `token_ids` when asked. Pure.
 */
export function tokenChoices(
  tok: ChatTokenizer,
  text: string,
  withEos: boolean,
  chunk: number,
  want: { logprobs: boolean; tokenIds: boolean },
): { choices: Record<string, unknown>[]; completionTokens: number } {
  const ids = tok.encode(text);
  if (tok.eosTokenId !== undefined && withEos) ids.push(tok.eosTokenId);
  const choices: Record<string, unknown>[] = [];
  let sent = "";
  for (let i = 0; i < ids.length; i += chunk) {
    const part = ids.slice(i, i + chunk);
    const upto = tok.decode(
      ids.slice(0, Math.min(ids.length, i + chunk)).filter((x) => x !== tok.eosTokenId),
    );
    const choice: Record<string, unknown> = {
      index: 0,
      delta: { content: upto.slice(sent.length) },
      finish_reason: null,
    };
    sent = upto;
    if (want.logprobs) {
      choice["logprobs"] = {
        content: part.map((t, k) => ({
          token: `token_id:${t}`,
          logprob: doubleLogprob(t, i + k),
          bytes: null,
          top_logprobs: [],
        })),
      };
    }
    if (want.tokenIds) choice["token_ids"] = part;
    choices.push(choice);
  }
  return { choices, completionTokens: ids.length };
}

/** The content chunks of `text` without a tokenizer: `chunk` characters each, ~4 per token. Pure. */
export function textChoices(
  text: string,
  chunk: number,
): { choices: Record<string, unknown>[]; completionTokens: number } {
  const choices: Record<string, unknown>[] = [];
  for (let i = 0; i < text.length; i += chunk) {
    choices.push({ index: 0, delta: { content: text.slice(i, i + chunk) }, finish_reason: null });
  }
  return { choices, completionTokens: Math.ceil(text.length / 4) };
}

/** One chunk per tool call of call `n`, ids `call_d<n>_<i>`. Pure. */
export function toolCallChoices(
  calls: readonly { name: string; arguments: string }[],
  n: number,
): Record<string, unknown>[] {
  return calls.map((c, i) => ({
    index: 0,
    delta: {
      tool_calls: [
        {
          index: i,
          id: `call_d${n}_${i}`,
          type: "function",
          function: { name: c.name, arguments: c.arguments },
        },
      ],
    },
    finish_reason: null,
  }));
}
