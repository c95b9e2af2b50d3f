import { constants } from "node:fs";
import { type FileHandle, open, readFile, rename, stat, truncate, unlink, writeFile } from "node:fs/promises";
import type { z } from "zod";
import { FlakegymError } from "../errors.js";
import { runSecrets } from "../redact/redactor.js";
import { tempPathBeside } from "./temp-name.js";
import { appendWholeLine } from "./whole-line.js";
import { writeErrorOf } from "./write-error.js";

/**
 * Line-oriented files that survive a kill at any instant.
 *
 * A writer appends each record as one full line with ONE `write` call on a descriptor opened with
 * O_APPEND, so concurrent appenders in this process never interleave and a killed process leaves
 * at most one torn line, always the last one. Readers ignore a last line without its newline;
 * `repairJsonl` (used by `--resume`) truncates it away.
 *
 * Every byte these writers put in a file passes through `runSecrets` (src/redact/redactor.ts) first:
 * a secret the run knows (API key, judge key, gateway token) never reaches the run directory.
 */

/** Each file's pending appends: one at a time per file, so a torn write can be cut away safely. */
const appends = new Map<string, Promise<void>>();

/**
 * Appends one JSON value as one line, whole or not at all (a write cut short by a full disk is
 * truncated away; the error names the file). Resolves once the kernel has the whole line.
 */
export function appendJsonLine(file: string, value: unknown): Promise<void> {
  const line = Buffer.from(`${runSecrets.text(JSON.stringify(value))}\n`, "utf8");
  const next = (appends.get(file) ?? Promise.resolve()).then(async () => {
    let handle: FileHandle;
    try {
      handle = await open(file, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT, 0o644);
    } catch (err) {
      throw writeErrorOf(file, err);
    }
    try {
      await appendWholeLine(handle, line, file);
    } finally {
      await handle.close();
    }
  });
  const settled = next.catch(() => {});
  appends.set(file, settled);
  void settled.then(() => {
    if (appends.get(file) === settled) appends.delete(file);
  });
  return next;
}

/** The result of reading a JSONL file: its complete lines, and whether a torn last line was seen. */
export interface JsonlRead<T> {
  readonly records: T[];
  /** Bytes of a last line with no newline (a write cut short by a kill); 0 when the file is whole. */
  readonly tornBytes: number;
}

/**
 * Reads every complete line of a JSONL file. A missing file reads as empty. A last line without
 * its newline is ignored (reported in `tornBytes`); a complete line that is not valid JSON, or does
 * not match `schema`, is corruption and throws naming the file and line number.
 */
export async function readJsonl<T = unknown>(file: string, schema?: z.ZodType<T>): Promise<JsonlRead<T>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { records: [], tornBytes: 0 };
    throw err;
  }
  return parseJsonl(text, file, schema);
}

/** Pure part of `readJsonl`: parses text already read. `source` names the file in errors. */
export function parseJsonl<T = unknown>(text: string, source: string, schema?: z.ZodType<T>): JsonlRead<T> {
  const lastNewline = text.lastIndexOf("\n");
  const complete = lastNewline === -1 ? "" : text.slice(0, lastNewline);
  const tornBytes = Buffer.byteLength(text.slice(lastNewline + 1), "utf8");
  const records: T[] = [];
  if (complete.length === 0 && lastNewline === -1) return { records, tornBytes };
  const lines = complete.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (line.trim() === "") continue;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (cause) {
      throw new FlakegymError("E_JSONL", `${source}: line ${i + 1} is not valid JSON`, {
        cause,
        hint: "only the last line of a file may be torn; this one is complete, so the file was edited or corrupted",
      });
    }
    if (schema) {
      const parsed = schema.safeParse(value);
      if (!parsed.success) {
        const issue = parsed.error.issues[0]!;
        throw new FlakegymError(
          "E_JSONL",
          `${source}: line ${i + 1}: field '${issue.path.join(".")}': ${issue.message}`,
        );
      }
      records.push(parsed.data);
    } else {
      records.push(value as T);
    }
  }
  return { records, tornBytes };
}

/** `readJsonl` that skips bad lines instead of throwing: each is named (file, line, why) in `bad`. */
export interface JsonlLenientRead<T> extends JsonlRead<T> {
  /** One sentence per complete line that is not JSON or does not match the schema. */
  readonly bad: string[];
}

/**
 * Reads every complete line of a JSONL file like `readJsonl`, but a complete line that is not JSON
 * or does not match `schema` is skipped and named in `bad` (one odd line never stops the reader).
 * For files whose lines can be written again from elsewhere (metrics and samples, from result.json).
 */
export async function readJsonlLenient<T>(file: string, schema: z.ZodType<T>): Promise<JsonlLenientRead<T>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { records: [], tornBytes: 0, bad: [] };
    throw err;
  }
  return parseJsonlLenient(text, file, schema);
}

/** Pure part of `readJsonlLenient`. */
export function parseJsonlLenient<T>(
  text: string,
  source: string,
  schema: z.ZodType<T>,
): JsonlLenientRead<T> {
  const lastNewline = text.lastIndexOf("\n");
  const tornBytes = Buffer.byteLength(text.slice(lastNewline + 1), "utf8");
  const records: T[] = [];
  const bad: string[] = [];
  if (lastNewline === -1) return { records, tornBytes, bad };
  text
    .slice(0, lastNewline)
    .split("\n")
    .forEach((line, i) => {
      if (line.trim() === "") return;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        bad.push(`${source}: line ${i + 1} is not JSON (edited or corrupted); it is skipped`);
        return;
      }
      const parsed = schema.safeParse(value);
      if (parsed.success) records.push(parsed.data);
      else {
        const issue = parsed.error.issues[0]!;
        bad.push(
          `${source}: line ${i + 1}: field '${issue.path.join(".")}': ${issue.message}; it is skipped`,
        );
      }
    });
  return { records, tornBytes, bad };
}

/** Truncates a torn last line (a write cut short by a kill). Returns the bytes removed. */
export async function repairJsonl(file: string): Promise<number> {
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw err;
  }
  if (size === 0) return 0;
  const text = await readFile(file);
  const lastNewline = text.lastIndexOf(0x0a);
  const keep = lastNewline + 1;
  if (keep === size) return 0;
  await truncate(file, keep);
  return size - keep;
}

/** Writes a whole file atomically: a temp file in the same directory, then rename over the target. */
export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = tempPathBeside(file);
  try {
    await writeFile(tmp, typeof data === "string" ? runSecrets.text(data) : runSecrets.bytes(data));
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw writeErrorOf(file, err);
  }
}

/**
 * `writeFileAtomic` of text made piece by piece: each piece is redacted and written before the
 * next is asked for (memory holds one piece), `signal` is checked between pieces, and the file
 * appears only whole — on an error or an abort the temporary file is removed. Returns the bytes.
 */
export async function writeStreamAtomic(
  file: string,
  pieces: AsyncIterable<string>,
  signal?: AbortSignal,
): Promise<number> {
  const tmp = tempPathBeside(file);
  let bytes = 0;
  try {
    const handle = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o644);
    try {
      for await (const piece of pieces) {
        signal?.throwIfAborted();
        const b = Buffer.from(runSecrets.text(piece), "utf8");
        await handle.write(b);
        bytes += b.length;
      }
      signal?.throwIfAborted();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
    return bytes;
  } catch (err) {
    await unlink(tmp).catch(() => {});
    if (signal?.aborted) throw err;
    throw writeErrorOf(file, err);
  }
}

/** `writeFileAtomic` of pretty JSON with a trailing newline. */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(value, null, 2)}\n`);
}
