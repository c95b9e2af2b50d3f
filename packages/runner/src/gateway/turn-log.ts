import { mkdir, open, readFile } from "node:fs/promises";
import { dirname } from "node:path";
import { z } from "zod";
import { FlakegymError } from "../errors.js";
import { ChatRequest, CompletedResponse } from "../policy/chat.js";

/**
 * `turns.jsonl`: one JSON line per model call of a trajectory, in call order. Each line is
 * appended with a single `write` of the whole line to a file opened with O_APPEND, so a reader never
 * sees half a line and concurrent appenders never interleave.
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
    error: z.string().optional().describe("what went wrong (secrets redacted)"),
    request: ChatRequest.describe("the request in canonical chat form, system prompt first"),
    response: CompletedResponse.optional().describe("the answer (partial when the call failed mid-stream)"),
    latency: z
      .object({
        firstByteMs: z.number().nullable().describe("ms until the upstream's first event"),
        totalMs: z.number().describe("ms until the call ended"),
      })
      .strict(),
  })
  .strict();
export type TurnRecord = z.infer<typeof TurnRecord>;

/** Appends turn records for one trajectory, in order. */
export class TurnLogWriter {
  private chain: Promise<void> = Promise.resolve();
  private handle: Promise<import("node:fs/promises").FileHandle> | undefined;

  constructor(readonly path: string) {}

  /** Appends one record as one line (serialized after earlier appends). */
  append(record: TurnRecord): Promise<void> {
    const line = Buffer.from(`${JSON.stringify(record)}\n`, "utf8");
    const next = this.chain.then(async () => {
      this.handle ??= mkdir(dirname(this.path), { recursive: true }).then(() => open(this.path, "a"));
      const fh = await this.handle;
      const { bytesWritten } = await fh.write(line, 0, line.length);
      if (bytesWritten !== line.length) {
        throw new FlakegymError(
          "E_TURN_LOG",
          `short write to ${this.path}: ${bytesWritten} of ${line.length} bytes (disk full?)`,
        );
      }
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
