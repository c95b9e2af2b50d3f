/**
 * Child process of `npm run bench -- concurrency`: a slow OpenAI chat-completions server standing in
 * for a model under load. Each call waits `thinkMs` (spread ±50 %), then streams its turn's text in
 * 4-character chunks every `intervalMs`. The turn is picked by the number of assistant messages in
 * the request (Cline's XML tool protocol): look at the project, write a file, finish. Each answer
 * starts with `(call c<n>)`, so the turn log the gateway writes can be paired with this server's own
 * time for the call: the gateway's added latency is its `latency.totalMs` minus `serveMs` here.
 *
 * Protocol (IPC): argv `thinkMs intervalMs`; sends `{ ready: { baseUrl } }`; answers `{ calls }` to
 * `{ calls: true }` (one `{ n, turn, serveMs }` per finished call).
 */
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { xmlTool } from "@flakegym/cline-vendor";

const thinkMs = Number(process.argv[2] ?? 2000);
const intervalMs = Number(process.argv[3] ?? 20);

const TURNS = [
  `Let me look at the project.\n${xmlTool.executeCommand("ls")}`,
  `I'll add a note.\n${xmlTool.writeToFile("NOTES.md", "# notes\n\nconcurrency bench\n")}`,
  xmlTool.attemptCompletion("added NOTES.md"),
];

interface Call {
  readonly n: number;
  readonly turn: number;
  readonly serveMs: number;
}
const calls: Call[] = [];
let next = 0;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const server = createServer(async (req, res) => {
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
  const t0 = performance.now();
  const n = ++next;
  if (req.url !== "/v1/chat/completions") {
    res.writeHead(404, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
    return;
  }
  const body = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
    model?: string;
    messages?: { role: string }[];
    stream_options?: { include_usage?: boolean };
  };
  const turn = Math.min(TURNS.length - 1, (body.messages ?? []).filter((m) => m.role === "assistant").length);
  const text = `(call c${n}) ${TURNS[turn]}`;
  await sleep(thinkMs * (0.5 + Math.random()));
  const head = { id: `chatcmpl-slow-${n}`, object: "chat.completion.chunk", created: 0, model: body.model };
  const send = (payload: Record<string, unknown>) =>
    res.write(`data: ${JSON.stringify({ ...head, ...payload })}\n\n`);
  res.writeHead(200, { "content-type": "text/event-stream" });
  send({ choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }] });
  for (let i = 0; i < text.length; i += 4) {
    await sleep(intervalMs);
    send({ choices: [{ index: 0, delta: { content: text.slice(i, i + 4) }, finish_reason: null }] });
  }
  send({ choices: [{ index: 0, delta: {}, finish_reason: "stop" }] });
  if (body.stream_options?.include_usage) {
    const completion = Math.ceil(text.length / 4);
    send({
      choices: [],
      usage: { prompt_tokens: 1000, completion_tokens: completion, total_tokens: 1000 + completion },
    });
  }
  res.end("data: [DONE]\n\n");
  calls.push({ n, turn, serveMs: performance.now() - t0 });
});
server.listen(0, "127.0.0.1");
await once(server, "listening");
const { port } = server.address() as AddressInfo;
process.on("message", (m: { calls?: boolean }) => {
  if (m.calls) process.send?.({ calls });
});
process.on("disconnect", () => process.exit(0));
process.send?.({ ready: { baseUrl: `http://127.0.0.1:${port}/v1` } });
