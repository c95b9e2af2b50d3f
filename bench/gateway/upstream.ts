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
// token ids and texts of the "sampled" answer: 4 characters a token
const ids = Array.from({ length: tokens }, (_, i) => 1000 + ((i * 7919) % 30_000));
const texts = ids.map((id) => `t${id}`.slice(0, 4));
const promptIds = Array.from({ length: promptTokens }, (_, i) => 100 + ((i * 104_729) % 150_000));

/** Microseconds on CLOCK_MONOTONIC, the clock every process of the machine shares. */
const nowUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * A chunk to send: fixed text around the place where the token text goes. Every token's text is
 * followed by `~T<µs>~`, the moment the chunk is written, and the first token's by `~A<µs>~` too,
 * the moment the request arrived: the load generator reads them back to time both paths exactly.
 */
interface Piece {
  readonly before: string;
  readonly text: string | undefined;
  readonly after: string;
}
const MARK = "\u0000";

function chunkOf(facts: boolean, extra: Record<string, unknown>, choice: Record<string, unknown>): Piece {
  const json = `data: ${JSON.stringify({
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: MODEL,
    choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }],
    ...(facts ? extra : {}),
  })}\n\n`;
  const at = json.indexOf("\\u0000");
  if (at < 0) return { before: json, text: undefined, after: "" };
  return { before: json.slice(0, at), text: "", after: json.slice(at + "\\u0000".length) };
}

/** The whole answer as SSE chunks, with and without vLLM's token facts. */
function answer(facts: boolean): Piece[] {
  const out = [
    chunkOf(facts, { prompt_token_ids: promptIds }, { delta: { role: "assistant", content: "" } }),
  ];
  for (const [i, id] of ids.entries()) {
    const choice: Record<string, unknown> = { delta: { content: MARK } };
    if (facts) {
      choice["logprobs"] = {
        content: [
          { token: `token_id:${id}`, logprob: -((id % 97) + 1) / 100, bytes: null, top_logprobs: [] },
        ],
      };
      choice["token_ids"] = [id];
    }
    out.push({ ...chunkOf(facts, {}, choice), text: texts[i]! });
  }
  // the last step: finish reason, usage (stream_options.include_usage) and [DONE]
  const usage = {
    prompt_tokens: promptTokens,
    completion_tokens: tokens,
    total_tokens: promptTokens + tokens,
  };
  const usageChunk = {
    id: "chatcmpl-bench",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: MODEL,
    choices: [],
    usage,
  };
  const finish = chunkOf(false, {}, { delta: {}, finish_reason: "stop" });
  out.push({
    before: `${finish.before}data: ${JSON.stringify(usageChunk)}\n\ndata: [DONE]\n\n`,
    text: undefined,
    after: "",
  });
  return out;
}
const withFacts = answer(true);
const withoutFacts = answer(false);

interface Stream {
  readonly res: ServerResponse;
  readonly chunks: readonly Piece[];
  readonly arrivedUs: number;
  next: number;
}

/** The text of the stream's next chunk, stamped now. */
function take(s: Stream): string {
  const index = s.next++;
  const p = s.chunks[index]!;
  if (p.text === undefined) return p.before;
  const arrival = index === 1 ? `~A${s.arrivedUs}~` : "";
  return `${p.before}${p.text}${arrival}~T${nowUs()}~${p.after}`;
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
      const chunk = take(s);
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
    const arrivedUs = nowUs();
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
    const stream: Stream = { res, chunks, arrivedUs, next: 0 };
    res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
    if (mode === "burst") {
      res.cork();
      while (stream.next < chunks.length - 1) res.write(take(stream));
      res.end(take(stream));
      return;
    }
    running.add(stream);
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
