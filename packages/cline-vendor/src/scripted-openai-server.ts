import { randomUUID } from "node:crypto";
import { unlink } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { match } from "ts-pattern";
import { z } from "zod";
import { closeHttpServers } from "./http-close.js";
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

/** What the server answers a request with, decided from the request line and the script's state. */
export type ScriptedAnswer =
  | { readonly kind: "not_found" }
  | { readonly kind: "unauthorized" }
  | { readonly kind: "exhausted" }
  | { readonly kind: "reply"; readonly turn: number }
  | { readonly kind: "fault"; readonly turn: number; readonly fault: TurnFault };

/** The fault to apply on this request of a turn: a hang always, a counted fault while `used < times`. */
export function activeFault(fault: TurnFault | undefined, used: number): TurnFault | undefined {
  return fault && (fault.kind === "hang" || used < fault.times) ? fault : undefined;
}

/** Pure routing: 404 for other routes, 401 without the bearer, exhausted past the script, else the turn. */
export function decideAnswer(a: {
  readonly method: string | undefined;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly apiKey: string | undefined;
  readonly nextTurn: number;
  readonly turnCount: number;
  readonly fault: TurnFault | undefined;
  readonly faultUses: number;
}): ScriptedAnswer {
  if (a.method !== "POST" || !/^(\/v1)?\/chat\/completions$/.test(a.path)) return { kind: "not_found" };
  if (a.apiKey !== undefined && a.authorization !== `Bearer ${a.apiKey}`) return { kind: "unauthorized" };
  if (a.nextTurn >= a.turnCount) return { kind: "exhausted" };
  const fault = activeFault(a.fault, a.faultUses);
  return fault ? { kind: "fault", turn: a.nextTurn, fault } : { kind: "reply", turn: a.nextTurn };
}

/** Metadata every chunk of one completion carries. */
export interface CompletionMeta {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  readonly chunkSize: number;
}

/** The content and tool-call chunks of a turn, and the finish reason and completion size they imply. */
function turnDeltas(
  turn: ScriptedTurn,
  chunkSize: number,
  callId: () => string,
): { deltas: object[]; finish: string; completionChars: number } {
  if (!("tool_calls" in turn)) {
    const deltas = chunks(turn.text, chunkSize).map((c) => ({ content: c }));
    return { deltas, finish: "stop", completionChars: turn.text.length };
  }
  const deltas: object[] = [];
  if (turn.text) for (const c of chunks(turn.text, chunkSize)) deltas.push({ content: c });
  let completionChars = turn.text?.length ?? 0;
  turn.tool_calls.forEach((call, index) => {
    const args = JSON.stringify(call.arguments);
    completionChars += args.length + call.name.length;
    deltas.push({
      tool_calls: [{ index, id: callId(), type: "function", function: { name: call.name, arguments: "" } }],
    });
    for (const c of chunks(args, chunkSize))
      deltas.push({ tool_calls: [{ index, function: { arguments: c } }] });
  });
  return { deltas, finish: "tool_calls", completionChars };
}

/**
 * Every SSE `data:` payload of a turn's streamed reply, in order: the role chunk, content/tool-call
 * chunks, the finish chunk, the usage chunk (scripted usage, else ~4 chars a token) and `[DONE]`.
 */
export function completionEvents(
  turn: ScriptedTurn,
  meta: CompletionMeta,
  promptChars: number,
  callId: () => string,
): (object | string)[] {
  const { id, created, model } = meta;
  const chunk = (delta: object, finish: string | null = null) => ({
    id,
    object: "chat.completion.chunk",
    created,
    model,
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const { deltas, finish, completionChars } = turnDeltas(turn, meta.chunkSize, callId);
  const promptTokens = turn.usage?.prompt_tokens ?? Math.ceil(promptChars / 4);
  const completionTokens = turn.usage?.completion_tokens ?? Math.ceil(completionChars / 4);
  const usage = {
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
  };
  return [
    chunk({ role: "assistant", content: "" }),
    ...deltas.map((d) => chunk(d)),
    chunk({}, finish),
    usage,
    "[DONE]",
  ];
}

/** The server's mutable state, shared by the request handler and the returned handle. */
interface ServerState {
  readonly turns: readonly ScriptedTurn[];
  readonly faults: ReadonlyMap<number, TurnFault>;
  readonly chunkSize: number;
  readonly model: string;
  readonly apiKey: string | undefined;
  readonly started: number;
  readonly requests: RecordedRequest[];
  readonly faultUses: Map<number, number>;
  readonly hung: Set<ServerResponse>;
  readonly waiters: { n: number; resolve: () => void }[];
  readonly servers: Server[];
  nextTurn: number;
}

function initialState(options: ScriptedOpenAiServerOptions): ServerState {
  const turns = options.turns.map((t, i) => {
    const parsed = ScriptedTurn.safeParse(t);
    if (!parsed.success) throw new Error(`scripted turn ${i} is invalid: ${parsed.error.message}`);
    return parsed.data;
  });
  const faults = new Map<number, TurnFault>();
  for (const [k, f] of Object.entries(options.faults ?? {})) faults.set(Number(k), TurnFault.parse(f));
  return {
    turns,
    faults,
    chunkSize: options.chunkSize ?? 64,
    model: options.model ?? "scripted",
    apiKey: options.apiKey,
    started: performance.now(),
    requests: [],
    faultUses: new Map(),
    hung: new Set(),
    waiters: [],
    servers: [],
    nextTurn: 0,
  };
}

function record(st: ServerState, r: Omit<RecordedRequest, "atMs">): void {
  st.requests.push({ ...r, atMs: Math.round(performance.now() - st.started) });
  for (const w of [...st.waiters]) {
    if (st.requests.length >= w.n) {
      st.waiters.splice(st.waiters.indexOf(w), 1);
      w.resolve();
    }
  }
}

function sendError(res: ServerResponse, status: number, message: string, type: string): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message, type } }));
}

function reply(st: ServerState, res: ServerResponse, turn: ScriptedTurn, promptChars: number): void {
  const meta = {
    id: `chatcmpl-${randomUUID()}`,
    created: Math.floor(Date.now() / 1000),
    model: st.model,
    chunkSize: st.chunkSize,
  };
  const events = completionEvents(turn, meta, promptChars, () => `call_${randomUUID().slice(0, 8)}`);
  res.writeHead(200, {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    connection: "keep-alive",
  });
  for (const e of events) sse(res, e);
  res.end();
}

function sendFault(st: ServerState, res: ServerResponse, fault: TurnFault): void {
  match(fault)
    .with({ kind: "hang" }, () => {
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      sse(res, {
        id: "chatcmpl-hang",
        object: "chat.completion.chunk",
        created: Math.floor(Date.now() / 1000),
        model: st.model,
        choices: [{ index: 0, delta: { role: "assistant", content: "" }, finish_reason: null }],
      });
      st.hung.add(res);
      res.on("close", () => st.hung.delete(res));
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
}

function parseJson(raw: string): unknown {
  try {
    return raw ? JSON.parse(raw) : undefined;
  } catch {
    return undefined;
  }
}

async function handle(st: ServerState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? "/").split("?")[0]!;
  const raw = await readBody(req);
  const base = { method: req.method ?? "GET", path, headers: req.headers, body: parseJson(raw) };
  const answer = decideAnswer({
    method: req.method,
    path,
    authorization: req.headers.authorization,
    apiKey: st.apiKey,
    nextTurn: st.nextTurn,
    turnCount: st.turns.length,
    fault: st.faults.get(st.nextTurn),
    faultUses: st.faultUses.get(st.nextTurn) ?? 0,
  });
  match(answer)
    .with({ kind: "not_found" }, () => {
      record(st, { ...base, turn: -1, answer: "not_found" });
      sendError(res, 404, `scripted server: no route ${req.method} ${path}`, "not_found");
    })
    .with({ kind: "unauthorized" }, () => {
      record(st, { ...base, turn: st.nextTurn, answer: "status" });
      sendError(res, 401, "scripted server: wrong or missing bearer token", "auth");
    })
    .with({ kind: "exhausted" }, () => {
      record(st, { ...base, turn: -1, answer: "exhausted" });
      sendError(res, 400, `scripted server: all ${st.turns.length} scripted turns were used`, "exhausted");
    })
    .with({ kind: "fault" }, (a) => {
      st.faultUses.set(a.turn, (st.faultUses.get(a.turn) ?? 0) + 1);
      record(st, { ...base, turn: a.turn, answer: a.fault.kind });
      sendFault(st, res, a.fault);
    })
    .with({ kind: "reply" }, (a) => {
      record(st, { ...base, turn: a.turn, answer: "reply" });
      st.nextTurn++;
      reply(st, res, st.turns[a.turn]!, raw.length);
    })
    .exhaustive();
}

function listen(srv: Server, target: { host: string; port: number } | { path: string }): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    srv.once("error", reject);
    if ("path" in target) srv.listen(target.path, () => resolve());
    else srv.listen(target.port, target.host, () => resolve());
  });
}

function makeServer(st: ServerState): Server {
  const srv = createServer((req, res) => {
    handle(st, req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  st.servers.push(srv);
  return srv;
}

function waitForRequests(st: ServerState, n: number, timeoutMs: number): Promise<void> {
  if (st.requests.length >= n) return Promise.resolve();
  return new Promise<void>((resolve, reject) => {
    const w = { n, resolve: () => {} };
    const t = setTimeout(() => {
      st.waiters.splice(st.waiters.indexOf(w), 1);
      reject(new Error(`scripted server: ${st.requests.length} of ${n} requests after ${timeoutMs} ms`));
    }, timeoutMs);
    w.resolve = () => {
      clearTimeout(t);
      resolve();
    };
    st.waiters.push(w);
  });
}

async function closeServer(st: ServerState): Promise<void> {
  for (const res of st.hung) res.destroy();
  st.hung.clear();
  await closeHttpServers(st.servers);
}

/** Starts the server. Close it with `close()` (also ends hung responses). */
export async function startScriptedOpenAiServer(
  options: ScriptedOpenAiServerOptions,
): Promise<ScriptedOpenAiServer> {
  const st = initialState(options);
  const tcp = makeServer(st);
  await listen(tcp, { host: options.host ?? "127.0.0.1", port: options.port ?? 0 });
  const port = (tcp.address() as AddressInfo).port;
  if (options.socketPath) {
    await unlink(options.socketPath).catch(() => {});
    await listen(makeServer(st), { path: options.socketPath });
  }
  const url = `http://${options.host ?? "127.0.0.1"}:${port}`;
  return {
    url,
    baseUrl: `${url}/v1`,
    port,
    ...(options.socketPath ? { socketPath: options.socketPath } : {}),
    get requests() {
      return st.requests;
    },
    get nextTurn() {
      return st.nextTurn;
    },
    waitForRequests: (n, timeoutMs = 30_000) => waitForRequests(st, n, timeoutMs),
    close: () => closeServer(st),
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
