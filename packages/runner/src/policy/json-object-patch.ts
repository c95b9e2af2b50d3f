/**
 * Sets top-level members of a JSON object given as bytes without parsing and re-serializing the
 * rest: the gateway forwards Cline's request (the whole conversation, tens to hundreds of KB) with a
 * few members changed (model, stream options, token-fact parameters), and writing the conversation's
 * bytes through costs a copy where `JSON.stringify` of the parsed body costs a full serialization.
 *
 * `patchJsonObject(json, set)` returns JSON text equal in meaning to
 * `JSON.stringify({ ...JSON.parse(json), ...set })`: every top-level member whose (decoded) key is
 * in `set` is dropped, the others are kept byte for byte, and `set`'s members are appended
 * (`undefined` values are left out, as JSON.stringify leaves them out). It returns undefined when
 * `json` is not one JSON object (the caller then serializes as before); it expects valid JSON (the
 * gateway has parsed it already) and never returns text for input it could not delimit.
 */
export function patchJsonObject(
  json: Uint8Array,
  set: Readonly<Record<string, unknown>>,
): Buffer | undefined {
  const b = Buffer.isBuffer(json) ? json : Buffer.from(json.buffer, json.byteOffset, json.byteLength);
  const n = b.length;
  let i = skipWs(b, 0);
  if (b[i] !== OPEN_BRACE) return undefined;
  i = skipWs(b, i + 1);
  const kept: Buffer[] = [];
  if (b[i] === CLOSE_BRACE) i++;
  else {
    for (;;) {
      if (b[i] !== QUOTE) return undefined;
      const keyStart = i;
      const keyEnd = endOfString(b, i);
      if (keyEnd < 0) return undefined;
      i = skipWs(b, keyEnd);
      if (b[i] !== COLON) return undefined;
      const valueEnd = endOfValue(b, skipWs(b, i + 1));
      if (valueEnd < 0) return undefined;
      let key: string;
      try {
        key = JSON.parse(b.toString("utf8", keyStart, keyEnd)) as string;
      } catch {
        return undefined;
      }
      if (!Object.hasOwn(set, key)) kept.push(b.subarray(keyStart, valueEnd));
      i = skipWs(b, valueEnd);
      if (b[i] === COMMA) {
        i = skipWs(b, i + 1);
        continue;
      }
      if (b[i] !== CLOSE_BRACE) return undefined;
      i++;
      break;
    }
  }
  if (skipWs(b, i) !== n) return undefined;
  const parts: Buffer[] = [Buffer.from("{")];
  for (const [k, m] of kept.entries()) {
    if (k > 0) parts.push(COMMA_BUF);
    parts.push(m);
  }
  let sep = kept.length > 0;
  for (const [k, v] of Object.entries(set)) {
    if (v === undefined) continue;
    parts.push(Buffer.from(`${sep ? "," : ""}${JSON.stringify(k)}:${JSON.stringify(v)}`, "utf8"));
    sep = true;
  }
  parts.push(Buffer.from("}"));
  return Buffer.concat(parts);
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA_BUF = Buffer.from(",");

function skipWs(b: Buffer, i: number): number {
  while (i < b.length) {
    const c = b[i]!;
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** `b[i]` is a string's opening quote: the index after its closing quote, or -1. */
function endOfString(b: Buffer, i: number): number {
  let j = i + 1;
  for (;;) {
    const q = b.indexOf(QUOTE, j);
    if (q < 0) return -1;
    // the quote is escaped when an odd number of backslashes precede it
    let k = q - 1;
    while (k > i && b[k] === BACKSLASH) k--;
    if ((q - 1 - k) % 2 === 0) return q + 1;
    j = q + 1;
  }
}

/** The index after the JSON value starting at `b[i]`, or -1. */
function endOfValue(b: Buffer, i: number): number {
  const c = b[i];
  if (c === undefined) return -1;
  if (c === QUOTE) return endOfString(b, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    let j = i;
    while (j < b.length) {
      const d = b[j]!;
      if (d === QUOTE) {
        j = endOfString(b, j);
        if (j < 0) return -1;
        continue;
      }
      if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) {
        depth--;
        if (depth === 0) return j + 1;
      }
      j++;
    }
    return -1;
  }
  // a number, true, false or null: up to the next delimiter
  let j = i;
  while (j < b.length) {
    const d = b[j]!;
    if (
      d === COMMA ||
      d === CLOSE_BRACE ||
      d === CLOSE_BRACKET ||
      d === 0x20 ||
      d === 0x0a ||
      d === 0x0d ||
      d === 0x09
    )
      break;
    j++;
  }
  return j > i ? j : -1;
}
