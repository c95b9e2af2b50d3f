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

export async function startInferenceServerDouble(
  opts: InferenceServerDoubleOptions,
): Promise<InferenceServerDouble> {
  const requests: Record<string, unknown>[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const hanging = new Set<ServerResponse>();
  const chunk = opts.chunk ?? 4;
  let n = 0;
  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as Record<string, unknown>;
    requests.push(body);
    headers.push(req.headers);
    if (req.url !== "/v1/chat/completions") {
      res.writeHead(404).end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
      return;
    }
    if (opts.refuseTokenFactParams) {
      const extra = Object.keys(TOKEN_FACT_PARAMS).find((k) => k.startsWith("return_") && k in body);
      if (extra) {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `Unrecognized request argument supplied: ${extra}` } }));
        return;
      }
    }
    const request = ChatRequest.parse(body);
    const reply = await opts.reply(request, ++n);
    if ("fail" in reply) {
      res.writeHead(reply.fail.status, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: reply.fail.message, type: "server_error" } }));
      return;
    }
    if ("hang" in reply) {
      hanging.add(res);
      res.on("close", () => hanging.delete(res));
      if (reply.afterText !== undefined) {
        res.writeHead(200, { "content-type": "text/event-stream" });
        const delta = { role: "assistant", content: reply.afterText };
        const ev = {
          id: `chatcmpl-double-${n}`,
          object: "chat.completion.chunk",
          created: 0,
          model: "double",
        };
        res.write(
          `data: ${JSON.stringify({ ...ev, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`,
        );
      }
      return;
    }
    if ("brokenStream" in reply) {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const delta = { role: "assistant", content: reply.brokenStream.text };
      const ev = { id: `chatcmpl-double-${n}`, object: "chat.completion.chunk", created: 0, model: "double" };
      res.write(
        `data: ${JSON.stringify({ ...ev, choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`,
      );
      await new Promise((r) => setTimeout(r, 20));
      res.destroy();
      return;
    }
    const tok = opts.tokenizer;
    const wantFacts = body["logprobs"] === true && body["return_tokens_as_token_ids"] === true;
    const text = reply.text ?? "";
    const calls = reply.toolCalls ?? [];
    const id = `chatcmpl-double-${n}`;
    const model = String(body["model"] ?? "double");
    const pace = opts.intervalMs ?? 0;
    const send = async (payload: Record<string, unknown>) => {
      if (pace > 0) await new Promise((r) => setTimeout(r, pace));
      res.write(
        `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 0, model, ...payload })}\n\n`,
      );
    };
    res.writeHead(200, { "content-type": "text/event-stream" });
    let promptIds: number[] | undefined;
    if (tok) promptIds = tok.apply(request.messages, { addGenerationPrompt: true, tools: request.tools });
    await send({
      choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
      ...(tok && body["return_token_ids"] === true ? { prompt_token_ids: promptIds } : {}),
    });
    let completionTokens = 0;
    if (tok) {
      const ids = tok.encode(text);
      if (tok.eosTokenId !== undefined && calls.length === 0) ids.push(tok.eosTokenId);
      completionTokens = ids.length;
      let sent = "";
      for (let i = 0; i < ids.length; i += chunk) {
        const part = ids.slice(i, i + chunk);
        const upto = tok.decode(
          ids.slice(0, Math.min(ids.length, i + chunk)).filter((x) => x !== tok.eosTokenId),
        );
        const delta = upto.slice(sent.length);
        sent = upto;
        const choice: Record<string, unknown> = { index: 0, delta: { content: delta }, finish_reason: null };
        if (wantFacts) {
          choice["logprobs"] = {
            content: part.map((t, k) => ({
              token: `token_id:${t}`,
              logprob: doubleLogprob(t, i + k),
              bytes: null,
              top_logprobs: [],
            })),
          };
        }
        if (body["return_token_ids"] === true) choice["token_ids"] = part;
        await send({ choices: [choice] });
      }
    } else {
      for (let i = 0; i < text.length; i += chunk) {
        await send({
          choices: [{ index: 0, delta: { content: text.slice(i, i + chunk) }, finish_reason: null }],
        });
      }
      completionTokens = Math.ceil(text.length / 4);
    }
    for (const [i, c] of calls.entries()) {
      await send({
        choices: [
          {
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
          },
        ],
      });
    }
    await send({
      choices: [{ index: 0, delta: {}, finish_reason: calls.length > 0 ? "tool_calls" : "stop" }],
    });
    const promptTokens = promptIds?.length ?? Math.ceil(JSON.stringify(request.messages).length / 4);
    if ((body["stream_options"] as { include_usage?: boolean } | undefined)?.include_usage) {
      const usage = reply.usage ?? { prompt_tokens: promptTokens, completion_tokens: completionTokens };
      await send({
        choices: [],
        usage: { ...usage, total_tokens: usage.prompt_tokens + usage.completion_tokens },
      });
    }
    res.end("data: [DONE]\n\n");
  };
  const server: Server = createServer((req, res) => {
    handler(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(JSON.stringify({ error: { message: String(err) } }));
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    headers,
    close: async () => {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
