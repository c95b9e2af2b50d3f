import { randomUUID } from "node:crypto";
import { unlink } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { match } from "ts-pattern";
import { z } from "zod";
import { ScriptedTurn } from "./scripted-turn.js";

/**
 * A minimal scripted OpenAI-compatible chat-completions server: the deterministic stand-in for a
 * policy model. It speaks exactly what Cline's OpenAI-compatible provider sends and expects
 * (FACTS §6): `POST /v1/chat/completions` (or `/chat/completions`), `stream: true` with
 * `stream_options.include_usage`, SSE `data:` chunks and a final `data: [DONE]`. It replays a list
 * of assistant turns — raw text with XML tool tags, or native `tool_calls` — records every request,
 * and can inject faults on a chosen turn. Used by `flakegym doctor` and by the test utilities.
 */

/** A fault injected on a turn before (or instead of) its reply. */
export const TurnFault = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z
        .literal("hang")
        .describe("send headers and the first chunk, then nothing until the client goes away"),
    })
    .strict(),
  z
    .object({
      kind: z.literal("status"),
      status: z.number().int().min(400).max(599).describe("HTTP status to answer with"),
      times: z
        .number()
        .int()
        .min(1)
        .describe("how many requests of this turn get the error; later ones succeed"),
      body: z.string().optional(),
    })
    .strict(),
  z
    .object({
      kind: z.literal("malformed"),
      times: z.number().int().min(1).describe("how many requests of this turn get a broken SSE stream"),
    })
    .strict(),
]);
export type TurnFault = z.infer<typeof TurnFault>;

/** A request the server received. */
export interface RecordedRequest {
  /** ms since the server started. */
  readonly atMs: number;
  /** The turn this request was answered for (the index into `turns`), or -1 when exhausted. */
  readonly turn: number;
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Parsed JSON body (undefined when it was not JSON). */
  readonly body: unknown;
  /** What the server did. */
  readonly answer: "reply" | "status" | "malformed" | "hang" | "exhausted" | "not_found";
}

export interface ScriptedOpenAiServerOptions {
  readonly turns: readonly ScriptedTurn[];
  /** Faults keyed by turn index. */
  readonly faults?: Readonly<Record<number, TurnFault>>;
  /** TCP host to listen on (port 0 = any free port). Default 127.0.0.1:0. */
  readonly host?: string;
  readonly port?: number;
  /** Also listen on this unix socket path (replaced if it exists). */
  readonly socketPath?: string;
  /** Characters per content chunk. Default 64. */
  readonly chunkSize?: number;
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401. */
  readonly apiKey?: string;
  /** Model name echoed in chunks. Default "scripted". */
  readonly model?: string;
}

export interface ScriptedOpenAiServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `url + "/v1"`: what to configure as the OpenAI-compatible base URL. */
  readonly baseUrl: string;
  readonly port: number;
  readonly socketPath?: string;
  /** Every request so far, in arrival order. */
  readonly requests: readonly RecordedRequest[];
  /** Index of the next turn to be answered. */
  readonly nextTurn: number;
  /** Resolves once `n` requests have arrived (or rejects after `timeoutMs`). */
  waitForRequests(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

function sse(res: ServerResponse, data: unknown): void {
  res.write(`data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
}

function chunks(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of req) parts.push(c as Buffer);
  return Buffer.concat(parts).toString("utf8");
}

/** Starts the server. Close it with `close()` (also ends hung responses). */
export async function startScriptedOpenAiServer(
  options: ScriptedOpenAiServerOptions,
): Promise<ScriptedOpenAiServer> {
  const turns = options.turns.map((t, i) => {
    const parsed = ScriptedTurn.safeParse(t);
    if (!parsed.success) throw new Error(`scripted turn ${i} is invalid: ${parsed.error.message}`);
    return parsed.data;
  });
  const faults = new Map<number, TurnFault>();
  for (const [k, f] of Object.entries(options.faults ?? {})) faults.set(Number(k), TurnFault.parse(f));
  const chunkSize = options.chunkSize ?? 64;
  const model = options.model ?? "scripted";
  const started = performance.now();
  const requests: RecordedRequest[] = [];
  const faultUses = new Map<number, number>();
  const hung = new Set<ServerResponse>();
  const waiters: { n: number; resolve: () => void }[] = [];
  let nextTurn = 0;

  const record = (r: Omit<RecordedRequest, "atMs">) => {
    requests.push({ ...r, atMs: Math.round(performance.now() - started) });
    for (const w of [...waiters]) {
      if (requests.length >= w.n) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };

  const reply = (res: ServerResponse, turn: ScriptedTurn, promptChars: number) => {
    const id = `chatcmpl-${randomUUID()}`;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta: object, finish: string | null = null) => ({
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [{ index: 0, delta, finish_reason: finish }],
    });
    res.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      connection: "keep-alive",
    });
    sse(res, chunk({ role: "assistant", content: "" }));
    let completionChars = 0;
    let finish = "stop";
    if ("tool_calls" in turn) {
      if (turn.text) for (const c of chunks(turn.text, chunkSize)) sse(res, chunk({ content: c }));
      completionChars += turn.text?.length ?? 0;
      turn.tool_calls.forEach((call, index) => {
        const args = JSON.stringify(call.arguments);
        completionChars += args.length + call.name.length;
        sse(
          res,
          chunk({
            tool_calls: [
              {
                index,
                id: `call_${randomUUID().slice(0, 8)}`,
                type: "function",
                function: { name: call.name, arguments: "" },
              },
            ],
          }),
        );
        for (const c of chunks(args, chunkSize))
          sse(res, chunk({ tool_calls: [{ index, function: { arguments: c } }] }));
      });
      finish = "tool_calls";
    } else {
      for (const c of chunks(turn.text, chunkSize)) sse(res, chunk({ content: c }));
      completionChars += turn.text.length;
    }
    sse(res, chunk({}, finish));
    const promptTokens = turn.usage?.prompt_tokens ?? Math.ceil(promptChars / 4);
    const completionTokens = turn.usage?.completion_tokens ?? Math.ceil(completionChars / 4);
    sse(res, {
      id,
      object: "chat.completion.chunk",
      created,
      model,
      choices: [],
      usage: {
        prompt_tokens: promptTokens,
        completion_tokens: completionTokens,
        total_tokens: promptTokens + completionTokens,
      },
    });
    sse(res, "[DONE]");
    res.end();
  };

  const handler = async (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0]!;
    const raw = await readBody(req);
    let body: unknown;
    try {
      body = raw ? JSON.parse(raw) : undefined;
    } catch {
      body = undefined;
    }
    const base = { method: req.method ?? "GET", path, headers: req.headers, body };
    if (req.method !== "POST" || !/^(\/v1)?\/chat\/completions$/.test(path)) {
      record({ ...base, turn: -1, answer: "not_found" });
      res.writeHead(404, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          error: { message: `scripted server: no route ${req.method} ${path}`, type: "not_found" },
        }),
      );
      return;
    }
    if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`) {
      record({ ...base, turn: nextTurn, answer: "status" });
      res.writeHead(401, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          error: { message: "scripted server: wrong or missing bearer token", type: "auth" },
        }),
      );
      return;
    }
    const turnIndex = nextTurn;
    const turn = turns[turnIndex];
    if (turn === undefined) {
      record({ ...base, turn: -1, answer: "exhausted" });
      res.writeHead(400, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          error: {
            message: `scripted server: all ${turns.length} scripted turns were used`,
            type: "exhausted",
          },
        }),
      );
      return;
    }
    const fault = faults.get(turnIndex);
    const used = faultUses.get(turnIndex) ?? 0;
    const active = fault && (fault.kind === "hang" || used < fault.times) ? fault : undefined;
    if (active) faultUses.set(turnIndex, used + 1);
    const answer = active?.kind ?? "reply";
    record({ ...base, turn: turnIndex, answer: answer === "hang" ? "hang" : answer });
    if (!active) {
      nextTurn++;
      reply(res, turn, raw.length);
      return;
    }
    match(active)
      .with({ kind: "hang" }, () => {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        sse(res, {
          id: "chatcmpl-hang",
          object: "chat.completion.chunk",
          created: Math.floor(Date.now() / 1000),
          model,
          choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
        });
        hung.add(res);
        res.on("close", () => hung.delete(res));
      })
      .with({ kind: "status" }, (f) => {
        res.writeHead(f.status, { "content-type": "application/json" });
        res.end(
          f.body ??
            JSON.stringify({ error: { message: `scripted fault: HTTP ${f.status}`, type: "server_error" } }),
        );
      })
      .with({ kind: "malformed" }, () => {
        res.writeHead(200, { "content-type": "text/event-stream" });
        res.write('data: {"id":"chatcmpl-bad","choices":[{"index":0,"delta":{"content":"unterminated\n\n');
        res.write("data: this is not json\n\n");
        res.end();
      })
      .exhaustive();
  };

  const servers: Server[] = [];
  const listen = (srv: Server, target: { host: string; port: number } | { path: string }) =>
    new Promise<void>((resolve, reject) => {
      srv.once("error", reject);
      if ("path" in target) srv.listen(target.path, () => resolve());
      else srv.listen(target.port, target.host, () => resolve());
    });
  const make = () => {
    const srv = createServer((req, res) => {
      handler(req, res).catch((err: unknown) => {
        if (!res.headersSent) res.writeHead(500);
        res.end(String(err));
      });
    });
    servers.push(srv);
    return srv;
  };
  const tcp = make();
  await listen(tcp, { host: options.host ?? "127.0.0.1", port: options.port ?? 0 });
  const port = (tcp.address() as AddressInfo).port;
  if (options.socketPath) {
    await unlink(options.socketPath).catch(() => {});
    await listen(make(), { path: options.socketPath });
  }
  const url = `http://${options.host ?? "127.0.0.1"}:${port}`;
  return {
    url,
    baseUrl: `${url}/v1`,
    port,
    ...(options.socketPath ? { socketPath: options.socketPath } : {}),
    get requests() {
      return requests;
    },
    get nextTurn() {
      return nextTurn;
    },
    waitForRequests(n, timeoutMs = 30_000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const w = { n, resolve: () => {} };
        const t = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`scripted server: ${requests.length} of ${n} requests after ${timeoutMs} ms`));
        }, timeoutMs);
        w.resolve = () => {
          clearTimeout(t);
          resolve();
        };
        waiters.push(w);
      });
    },
    async close() {
      for (const res of hung) res.destroy();
      hung.clear();
      await Promise.all(
        servers.map(
          (s) =>
            new Promise<void>((resolve) => {
              s.close(() => resolve());
              s.closeAllConnections();
            }),
        ),
      );
    },
  };
}

/** Builders for Cline's generic XML tool protocol (what unknown model ids get). */
export const xmlTool = {
  writeToFile: (path: string, content: string) =>
    `<write_to_file>\n<path>${path}</path>\n<content>\n${content}\n</content>\n</write_to_file>`,
  replaceInFile: (path: string, search: string, replace: string) =>
    `<replace_in_file>\n<path>${path}</path>\n<diff>\n------- SEARCH\n${search}\n=======\n${replace}\n+++++++ REPLACE\n</diff>\n</replace_in_file>`,
  executeCommand: (command: string, requiresApproval = false) =>
    `<execute_command>\n<command>${command}</command>\n<requires_approval>${requiresApproval}</requires_approval>\n</execute_command>`,
  readFile: (path: string) => `<read_file>\n<path>${path}</path>\n</read_file>`,
  askFollowupQuestion: (question: string) =>
    `<ask_followup_question>\n<question>${question}</question>\n</ask_followup_question>`,
  attemptCompletion: (result: string) =>
    `<attempt_completion>\n<result>\n${result}\n</result>\n</attempt_completion>`,
};
