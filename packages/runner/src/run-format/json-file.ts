import { basename } from "node:path";
import { FlakegymError } from "../errors.js";

/**
 * Parses a JSON file's text; a file that is not JSON (cut by a crash, a full disk or an edit) is an
 * error naming the file, where the parse stopped and what to do, never a bare parser message.
 */

/** Where the parser stopped, from its message (`position 2000`, `line 3 column 7`), if it says. Pure. */
export function parsePositionOf(message: string): string | undefined {
  const m = /(position \d+(?: \(line \d+ column \d+\))?|line \d+ column \d+)/.exec(message);
  return m?.[1];
}

/** The error for a file that is not JSON. Pure. */
export function notJsonError(path: string, err: unknown, next: string): FlakegymError {
  const message = err instanceof Error ? err.message : String(err);
  const where =
    parsePositionOf(message) ?? (/end of (JSON )?input/i.test(message) ? "end of file" : undefined);
  return new FlakegymError(
    "E_NOT_JSON",
    `${basename(path)} is truncated or not JSON: ${path}${where ? ` (${where})` : ""}`,
    { hint: next, cause: err },
  );
}

/** JSON.parse of a file's text, or the error naming the file and `next` (what to do). */
export function parseJsonFile(text: string, path: string, next: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw notJsonError(path, err, next);
  }
}
