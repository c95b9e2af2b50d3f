import { randomInt } from "node:crypto";

/**
 * The prompt token ids an inference server returns (vLLM `prompt_token_ids`, first chunk) are tens
 * of thousands of integers per call, which the gateway only writes to the turn log. Parsing them
 * into numbers and serializing them again cost about a millisecond of CPU per call; instead their
 * JSON text is lifted out of the chunk as it came (checked to be a plain array of integers) and
 * spliced into the turn-log line as it is written. What a reader parses is the same.
 */

/** JSON text of a non-empty array of non-negative integers, exactly as `JSON.stringify` writes one. */
export type IntArrayJson = string & { readonly __intArrayJson: true };

/** Digits per id at most: beyond 15 a number may not survive a round trip through a double. */
const MAX_DIGITS = 15;

/** One id: 0, or up to {@link MAX_DIGITS} digits without a leading zero. */
const INT = `(?:0|[1-9]\\d{0,${MAX_DIGITS - 1}})`;
/** A compiled regular expression is several times faster here than a loop over char codes. */
const INT_ARRAY = new RegExp(`^\\[${INT}(?:,${INT})*\\]$`);

/** `text` when it is `[d,d,…]` (compact, no leading zeros, ≤ 15 digits each), else undefined. Pure. */
export function asIntArrayJson(text: string): IntArrayJson | undefined {
  return INT_ARRAY.test(text) ? (text as IntArrayJson) : undefined;
}

const KEY = '"prompt_token_ids":[';

let nonce: number | undefined;
/** A per-process random stand-in value a server cannot guess (made on first use). */
function stand(): number {
  nonce ??= -randomInt(1, 2 ** 47);
  return nonce;
}

/**
 * Parses an OpenAI chunk's JSON text with its top-level `prompt_token_ids` lifted out as text:
 * the array is replaced by a random stand-in before parsing, and taken only if the stand-in is what
 * the parsed chunk's top-level member holds (the key inside a string, or nested, is left alone).
 * Undefined when the chunk has no such array or it is not plain integers: parse it as usual. Pure
 * but for the stand-in made once per process; throws as JSON.parse does on invalid JSON.
 */
export function parseChunkLiftingPromptIds(
  data: string,
): { chunk: Record<string, unknown>; promptIds: IntArrayJson } | undefined {
  const at = data.indexOf(KEY);
  if (at < 0) return undefined;
  const open = at + KEY.length - 1;
  const close = data.indexOf("]", open);
  if (close < 0) return undefined;
  const ids = asIntArrayJson(data.slice(open, close + 1));
  if (ids === undefined) return undefined;
  const s = stand();
  const chunk = JSON.parse(`${data.slice(0, open)}${s}${data.slice(close + 1)}`) as unknown;
  if (chunk === null || typeof chunk !== "object" || Array.isArray(chunk)) return undefined;
  const rec = chunk as Record<string, unknown>;
  if (rec["prompt_token_ids"] !== s) return undefined;
  delete rec["prompt_token_ids"];
  return { chunk: rec, promptIds: ids };
}

/** The stand-in string a turn-log line carries where the lifted ids go (see encodeTurnLine). */
export function promptIdsMark(): string {
  return `\u0000prompt-ids-${stand()}\u0000`;
}
