/**
 * Child process of `npm run bench -- gateway`: a vLLM-shaped OpenAI chat-completions server that
 * costs as little CPU as possible (every chunk is prepared at start), so that on a small machine the
 * upstream double steals little from the gateway it is measuring.
 *
 * It answers like vLLM does under continuous batching: one sampled token per chunk, and in `paced`
 * mode one decode step every `intervalMs` for ALL running streams at once (a request joins at the
 * next step), so the gateway gets the bursts of `streams` chunks a real batch produces. When the
 * request asks for token facts (`return_token_ids`, as the gateway's OpenAI upstream does), chunks
 * carry `prompt_token_ids` (first chunk), `token_ids` and `logprobs.content` spelled
 * `token_id:<id>`, as vLLM ≥ 0.10.2 sends them. `burst` mode writes the whole answer at once.
 *
 * Protocol (IPC): sends `{ ready: { baseUrl } }`; answers `{ stats }` to `{ stats: true }`.
 */
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const mode = process.argv[2] === "burst" ? "burst" : "paced";
const tokens = Number(process.argv[3] ?? 40);
const intervalMs = Number(process.argv[4] ?? 5);
const promptTokens = Number(process.argv[5] ?? 15_000);

const MODEL = "bench-model";
// token ids and texts of the "sampled" answer: 4 characters a token, a few tokens repeated
const ids = Array.from({ length: tokens }, (_, i) => 1000 + ((i * 7919) % 30_000));
const texts = ids.map((id) => `t${String(id).padStart(3, "0")}`.slice(0, 4));
const promptIds = Array.from({ length: promptTokens }, (_, i) => 100 + ((i * 104_729) % 150_000));

function chunkOf(facts: boolean, extra: Record<string, unknown>, choice: Record<string, unknown>): string {
  return `data: ${JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: MODEL,
    choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }],
    ...(facts ? extra : {}),
  })}\n\n`;
}

/** The whole answer as SSE chunks, with and without vLLM's token facts. */
function answer(facts: boolean): string[] {
  const out = [
    chunkOf(facts, { prompt_token_ids: promptIds }, { delta: { role: "assistant", content: "" } }),
  ];
  for (const [i, id] of ids.entries()) {
    const choice: Record<string, unknown> = { delta: { content: texts[i] } };
    if (facts) {
      choice["logprobs"] = {
        content: [{ token: `token_id:${id}`, logprob: -((id % 97) + 1) / 100, bytes: null, top_logprobs: [] }],
      };
      choice["token_ids"] = [id];
    }
    out.push(chunkOf(facts, {}, choice));
  }
  // the last step: finish reason, usage (stream_options.include_usage) and [DONE]
  const usage = { prompt_tokens: promptTokens, completion_tokens: tokens, total_tokens: promptTokens + tokens };
  const usageChunk = { id: "chatcmpl-bench", object: "chat.completion.chunk", created: 1_700_000_000, model: MODEL, choices: [], usage };
  out.push(
    `${chunkOf(false, {}, { delta: {}, finish_reason: "stop" })}data: ${JSON.stringify(usageChunk)}\n\ndata: [DONE]\n\n`,
  );
  return out;
}
const withFacts = answer(true);
const withoutFacts = answer(false);

interface Stream {
  readonly res: ServerResponse;
  readonly chunks: readonly string[];
  next: number;
}
const running = new Set<Stream>();
let calls = 0;
let steps = 0;

// one decode step for the whole batch, like vLLM's scheduler
if (mode === "paced") {
  setInterval(() => {
    if (running.size === 0) return;
    steps++;
    for (const s of running) {
      if (s.res.destroyed) {
        running.delete(s);
        continue;
      }
      const chunk = s.chunks[s.next++]!;
      if (s.next === s.chunks.length) {
        running.delete(s);
        s.res.end(chunk);
      } else s.res.write(chunk);
    }
  }, intervalMs);
}

const server = createServer({ noDelay: true, keepAliveTimeout: 60_000 }, (req, res) => {
  const parts: Buffer[] = [];
  req.on("data", (b: Buffer) => parts.push(b));
  req.on("end", () => {
    calls++;
    if (req.url !== "/v1/chat/completions") {
      res.writeHead(404).end(`{"error":{"message":"no route ${req.url}"}}`);
      return;
    }
    // a cheap look at the flags instead of parsing the (large) body: the bench sends compact JSON
    const body = Buffer.concat(parts).toString("latin1");
    if (!body.includes('"stream":true')) {
      res.writeHead(400).end('{"error":{"message":"the bench upstream only streams"}}');
      return;
    }
    const chunks = body.includes('"return_token_ids":true') ? withFacts : withoutFacts;
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    if (mode === "burst") {
      res.cork();
      for (let i = 0; i < chunks.length - 1; i++) res.write(chunks[i]!);
      res.end(chunks[chunks.length - 1]);
      return;
    }
    running.add({ res, chunks, next: 0 });
  });
});
server.listen(0, "127.0.0.1");
await once(server, "listening");
const { port } = server.address() as AddressInfo;
process.on("message", (m: { stats?: boolean }) => {
  if (m.stats) process.send!({ stats: { calls, steps, cpu: process.cpuUsage() } });
});
process.on("disconnect", () => process.exit(0));
process.send!({ ready: { baseUrl: `http://127.0.0.1:${port}/v1` } });
