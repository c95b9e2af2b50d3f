import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { xmlTool } from "@flakegym/test-utils";

/**
 * A model server on loopback that misbehaves on purpose, one fault per server (so one trajectory,
 * one fault). `ok` answers a two-turn plan (write NOTES.md, complete) in Cline's XML tool protocol;
 * every other kind is something real model servers do.
 */
export const MODEL_FAULTS = [
  "http-500",
  "hang",
  "drip",
  "malformed-json",
  "broken-stream",
  "echo-key",
  "echo-key-sse",
  "huge",
] as const;
/**
 * More instances of the same classes (`npm run chaos` only): a 503 whose Retry-After is an HTTP-date
 * (then the answer: the wait is honoured and the trajectory completes), a 429 with no Retry-After, a
 * 200 `application/json` answer cut mid-body, an SSE stream of comments and events with no data, and
 * a slow server (each answer after 5 s, within the silence limit: it completes).
 */
export const MORE_MODEL_FAULTS = ["retry-after-date", "429-bare", "json-cut", "sse-no-data", "slow"] as const;
/**
 * `slow`: the healthy plan, each answer sent only after {@link FaultOptions.delayMs} (a loaded model
 * server); the frozen-sandbox cases freeze a worker while its core waits on one.
 */
/**
 * `429-wait`: every answer a 429 asking to come back in {@link FaultOptions.retryAfterS} seconds.
 * `trickle`: a stream of one tiny whole event a second that never ends (each one holds off the
 * silence watchdog; only the trajectory's deadline ends it).
 */
export type ModelFault =
  | (typeof MODEL_FAULTS)[number]
  | (typeof MORE_MODEL_FAULTS)[number]
  | "ok"
  | "429-wait"
  | "trickle";

export interface FaultOptions {
  /** `slow`: how long each answer waits before its first byte (ms). Default 5000. */
  readonly delayMs?: number;
  /** `429-wait`: the Retry-After it sends (s). Default 20. */
  readonly retryAfterS?: number;
}

export interface FaultUpstream {
  readonly baseUrl: string;
  readonly fault: ModelFault;
  /** Requests received so far. */
  readonly requests: number;
  close(): Promise<void>;
}

const OK_TURNS = [
  `I'll leave a note.\n${xmlTool.writeToFile("NOTES.md", "chaos was here")}`,
  xmlTool.attemptCompletion("left a note"),
];

function chunk(content: string, finish: string | null = null): string {
  const body = {
    id: "chatcmpl-chaos",
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model: "chaos",
    choices: [{ index: 0, delta: { content }, finish_reason: finish }],
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

const sseHead = (res: ServerResponse) =>
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });

async function drain(req: IncomingMessage): Promise<void> {
  for await (const _ of req) {
    // the body is not needed
  }
}

export async function startFaultUpstream(fault: ModelFault, opts: FaultOptions = {}): Promise<FaultUpstream> {
  let requests = 0;
  let turn = 0;
  const open = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer(async (req, res) => {
    await drain(req);
    requests++;
    open.add(res);
    res.on("close", () => open.delete(res));
    const key = String(req.headers.authorization ?? "").replace(/^Bearer\s+/i, "");
    switch (fault) {
      case "ok": {
        const text = OK_TURNS[Math.min(turn++, OK_TURNS.length - 1)]!;
        sseHead(res);
        res.write(chunk(text));
        res.write(chunk("", "stop"));
        res.end("data: [DONE]\n\n");
        return;
      }
      case "slow": {
        const text = OK_TURNS[Math.min(turn++, OK_TURNS.length - 1)]!;
        const t = setTimeout(() => {
          timers.delete(t);
          if (res.destroyed) return;
          sseHead(res);
          res.write(chunk(text));
          res.write(chunk("", "stop"));
          res.end("data: [DONE]\n\n");
        }, opts.delayMs ?? 5000);
        timers.add(t);
        return;
      }
      case "http-500":
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "chaos: internal error", type: "server_error" } }));
        return;
      case "hang":
        sseHead(res);
        res.write(chunk(""));
        return; // nothing more until the client goes away
      case "drip": {
        // one byte of a valid stream every 2 s: never done before any sane deadline
        sseHead(res);
        const bytes = Buffer.from(chunk("d".repeat(200)));
        let i = 0;
        const t = setInterval(() => {
          if (res.destroyed || i >= bytes.length) {
            clearInterval(t);
            timers.delete(t);
            return;
          }
          res.write(bytes.subarray(i, i + 1));
          i++;
        }, 2000);
        timers.add(t);
        return;
      }
      case "trickle": {
        sseHead(res);
        const t = setInterval(() => {
          if (res.destroyed) {
            clearInterval(t);
            timers.delete(t);
            return;
          }
          res.write(chunk("."));
        }, 1000);
        timers.add(t);
        return;
      }
      case "malformed-json":
        sseHead(res);
        res.write('data: {"id":"chatcmpl-chaos","choices":[{"index":0,"delta":{"content":"unterminated\n\n');
        res.end("data: [DONE]\n\n");
        return;
      case "broken-stream":
        sseHead(res);
        res.write(chunk("I'll start"));
        res.socket?.destroy(); // connection reset mid-stream, no [DONE]
        return;
      case "echo-key":
        res.writeHead(401, { "content-type": "application/json", "x-chaos-echo": key });
        res.end(JSON.stringify({ error: { message: `invalid api key: ${key}`, type: "auth_error" } }));
        return;
      case "huge": {
        // a runaway answer: 4 MiB of text in 64 KiB events (the scenario's limit is 1 MiB)
        sseHead(res);
        const piece = chunk("x".repeat(64 * 1024));
        for (let i = 0; i < 64 && !res.destroyed; i++) res.write(piece);
        res.end("data: [DONE]\n\n");
        return;
      }
      case "retry-after-date": {
        // every other request: 503 asking to come back in 2 s as an HTTP-date; the next one answers
        if (requests % 2 === 1) {
          const at = new Date(Date.now() + 2000).toUTCString();
          res.writeHead(503, { "content-type": "application/json", "retry-after": at });
          res.end(JSON.stringify({ error: { message: "chaos: overloaded", type: "server_error" } }));
          return;
        }
        const text = OK_TURNS[Math.min(turn++, OK_TURNS.length - 1)]!;
        sseHead(res);
        res.write(chunk(text));
        res.write(chunk("", "stop"));
        res.end("data: [DONE]\n\n");
        return;
      }
      case "429-wait":
        res.writeHead(429, {
          "content-type": "application/json",
          "retry-after": String(opts.retryAfterS ?? 20),
        });
        res.end(JSON.stringify({ error: { message: "chaos: rate limited", type: "rate_limit" } }));
        return;
      case "429-bare":
        res.writeHead(429, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "chaos: rate limited", type: "rate_limit" } }));
        return;
      case "json-cut":
        res.writeHead(200, { "content-type": "application/json" });
        res.end('{"id":"chatcmpl-chaos","choices":[{"index":0,"message":{"content":"hal');
        return;
      case "sse-no-data":
        sseHead(res);
        res.write(": keep-alive\n\nevent: ping\n\nretry: 10\n\n");
        res.end();
        return;
      case "echo-key-sse":
        sseHead(res);
        res.write(chunk(`your key is ${key}`));
        res.end(`data: ${JSON.stringify({ error: { message: `stream failed for key ${key}` } })}\n\n`);
        return;
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    fault,
    get requests() {
      return requests;
    },
    async close() {
      for (const t of timers) {
        clearTimeout(t);
        clearInterval(t);
      }
      for (const res of open) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
