import { isUtf8 } from "node:buffer";
import { mkdir, open, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { FlakegymError } from "../errors.js";
import { ChatRequest, CompletedResponse } from "../policy/chat.js";
import { type IntArrayJson, promptIdsMark } from "../policy/prompt-ids-json.js";
import { runSecrets } from "../redact/redactor.js";
import { appendWholeLine } from "../run-format/whole-line.js";
import { writeErrorOf } from "../run-format/write-error.js";

/**
 * `turns.jsonl`: one JSON line per model call of a trajectory, in call order. Each line is
 * appended with a single `write` of the whole line to a file opened with O_APPEND, so a reader never
 * sees half a line and concurrent appenders never interleave. Every line passes through `runSecrets`
 * (src/redact/redactor.ts): no field holds a secret.
 */

export const TurnStatus = z.enum(["ok", "upstream_error", "timeout", "aborted", "refused"]);
export type TurnStatus = z.infer<typeof TurnStatus>;

export const TurnRecord = z
  .object({
    v: z.literal(1).describe("turn log format version"),
    trajectoryId: z.string(),
    seq: z.number().int().positive().describe("1-based model call number within the trajectory"),
    startedAt: z.string().describe("ISO time the gateway received the call"),
    protocol: z.enum(["openai", "anthropic"]).describe("the wire protocol the Cline core spoke"),
    stream: z.boolean().describe("whether the client asked for a stream"),
    upstream: z.string().describe("upstream id (policy spec without secrets)"),
    status: TurnStatus,
    error: z.string().optional().describe("what went wrong"),
    request: ChatRequest.describe("the request in canonical chat form, system prompt first"),
    response: CompletedResponse.optional().describe("the answer (partial when the call failed mid-stream)"),
    latency: z
      .object({
        firstByteMs: z.number().nullable().describe("ms until the upstream's first event"),
        totalMs: z.number().describe("ms until the call ended"),
        gatewayMs: z
          .number()
          .optional()
          .describe(
            "the gateway's own part of the call: from its body read to the client's whole answer, less the waits on the upstream",
          ),
        gatewayRunMs: z
          .number()
          .optional()
          .describe(
            "gatewayMs with each piece capped by the CPU time the gateway's thread ran meanwhile: its own part on a core of its own (written on the calls the gateway samples when it measures run time)",
          ),
      })
      .strict(),
  })
  .strict();
export type TurnRecord = z.infer<typeof TurnRecord>;

/**
 * One turn-log line, `\n` included. `requestJson`, when given, is the JSON text of
 * `record.request` as the client sent it (an OpenAI chat request already is in canonical form): it
 * is written as is instead of being serialized again — the longest part of a line, since Cline
 * resends the whole conversation with every call. It is used only when it is valid UTF-8 and holds
 * no line break (pretty-printed JSON does; then the request is serialized as usual). It must parse
 * to `record.request` (up to the defaults ChatRequest fills in, which a reader's parse fills in
 * again). `promptIdsJson`, when given, is `response.tokens.promptIds` as the inference server
 * wrote it (policy/prompt-ids-json.ts), written as is in that place.
 */
export function encodeTurnLine(
  record: TurnRecord,
  requestJson?: Uint8Array,
  promptIdsJson?: IntArrayJson,
): Buffer {
  const marked = promptIdsJson !== undefined ? withPromptIdsMark(record) : undefined;
  const json = (r: object) => {
    const text = JSON.stringify(r);
    return marked ? spliceLast(text, JSON.stringify(promptIdsMark()), promptIdsJson!) : text;
  };
  const r = marked ?? record;
  if (requestJson && isUtf8(requestJson) && !requestJson.includes(LF) && !requestJson.includes(CR)) {
    const { request: _logged, ...rest } = r;
    const tail = json(rest); // `{"v":1,…}`: never empty
    return Buffer.concat([REQUEST_KEY, requestJson, Buffer.from(`,${tail.slice(1)}\n`, "utf8")]);
  }
  return Buffer.from(`${json(r)}\n`, "utf8");
}

/**
 * The record with the random mark as `response.tokens.promptIds` (the last member written: the
 * response is the record's last member, tokens its last, promptIds theirs), or undefined without a
 * response. Pure.
 */
function withPromptIdsMark(record: TurnRecord): TurnRecord | undefined {
  const response = record.response;
  if (!response) return undefined;
  const promptIds = promptIdsMark() as unknown as number[];
  return { ...record, response: { ...response, tokens: { ...response.tokens, promptIds } } };
}

/** `text` with the last `mark` replaced by `by` (the mark is always there: it was just written). */
function spliceLast(text: string, mark: string, by: string): string {
  const at = text.lastIndexOf(mark);
  return at < 0 ? text : `${text.slice(0, at)}${by}${text.slice(at + mark.length)}`;
}
const LF = 10;
const CR = 13;
const REQUEST_KEY = Buffer.from('{"request":', "utf8");

/**
 * Appends turn records for one trajectory, in order. A record is serialized after the current
 * round of I/O callbacks (setImmediate), so that a call's log line does not hold up the chunks of
 * other calls that are ready to be forwarded; `append` resolves once the line is written.
 */
export class TurnLogWriter {
  private chain: Promise<void> = Promise.resolve();
  private handle: Promise<import("node:fs/promises").FileHandle> | undefined;

  constructor(readonly path: string) {}

  /** Appends one record as one line (serialized after earlier appends); see {@link encodeTurnLine}. */
  append(record: TurnRecord, requestJson?: Uint8Array, promptIdsJson?: IntArrayJson): Promise<void> {
    const next = this.chain.then(async () => {
      await new Promise<void>((resolve) => setImmediate(resolve));
      // the run's secrets never reach the log, whichever field (request, answer, error) holds them
      const line = runSecrets.bytes(encodeTurnLine(record, requestJson, promptIdsJson));
      this.handle ??= mkdir(dirname(this.path), { recursive: true }).then(() => open(this.path, "a"));
      const fh = await this.handle.catch((err: unknown) => {
        this.handle = undefined;
        throw writeErrorOf(this.path, err);
      });
      // whole lines or nothing: a write cut short by a full disk is truncated away
      await appendWholeLine(fh, line, this.path);
    });
    this.chain = next.catch(() => undefined);
    return next;
  }

  async close(): Promise<void> {
    await this.chain;
    if (this.handle) {
      const fh = await this.handle.catch(() => undefined);
      this.handle = undefined;
      await fh?.close();
    }
  }
}

/** Reads and validates a turn log; errors name the file and line. */
export async function readTurnLog(path: string, signal?: AbortSignal): Promise<TurnRecord[]> {
  let text: string;
  try {
    text = await readFile(path, { encoding: "utf8", ...(signal ? { signal } : {}) });
  } catch (err) {
    throw new FlakegymError("E_TURN_LOG", `cannot read turn log ${path}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  return parseTurnLog(text, path);
}

export function parseTurnLog(text: string, source = "turns.jsonl"): TurnRecord[] {
  const out: TurnRecord[] = [];
  const lines = text.split("\n");
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue;
    let data: unknown;
    try {
      data = JSON.parse(line);
    } catch (err) {
      throw new FlakegymError("E_TURN_LOG", `${source} line ${i + 1} is not JSON: ${(err as Error).message}`);
    }
    const parsed = TurnRecord.safeParse(data);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new FlakegymError(
        "E_TURN_LOG",
        `${source} line ${i + 1}: ${issue.path.join(".") || "(record)"}: ${issue.message}`,
      );
    }
    out.push(parsed.data);
  }
  return out;
}
