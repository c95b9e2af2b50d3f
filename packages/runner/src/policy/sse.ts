/**
 * Server-sent events, as OpenAI and Anthropic stream them: parse an upstream byte stream into
 * events, and encode events for a client. Follows the WHATWG event-stream rules that matter here:
 * LF, CRLF or CR line ends; `data:` lines joined with LF; `:` comments ignored; an event is
 * dispatched at a blank line; one optional space after the colon is dropped.
 *
 * This sits on the gateway's per-chunk path, so it scans with `indexOf` rather than a regular
 * expression and slices the text once per line (servers end lines with LF; CR and CRLF take a
 * character-by-character branch).
 */

export interface SseEvent {
  readonly event?: string;
  readonly data: string;
  readonly id?: string;
}

const LF = 10;
const CR = 13;
const COLON = 58;
const SPACE = 32;

/** Incremental parser: feed text, get whole events back. */
export class SseParser {
  /** Text after the last complete line (no line end in it, except perhaps a final CR). */
  private buf = "";
  /** Whether a CR has been seen: from then on lines are split the slow way. */
  private crSeen = false;
  private data: string | undefined;
  private moreData: string[] | undefined;
  private event: string | undefined;
  private id: string | undefined;

  /** Feeds a chunk of text; returns the events it completed. */
  push(text: string): SseEvent[] {
    const out: SseEvent[] = [];
    const carried = this.buf.length;
    const buf = carried > 0 ? this.buf + text : text;
    if (!this.crSeen && text.indexOf("\r") >= 0) this.crSeen = true;
    let pos = 0;
    if (!this.crSeen) {
      // the carried text holds no LF: search the new text only
      for (let end = buf.indexOf("\n", carried); end >= 0; end = buf.indexOf("\n", pos)) {
        const ev = this.line(buf, pos, end);
        pos = end + 1;
        if (ev) out.push(ev);
      }
    } else {
      const n = buf.length;
      // the carried text holds no line end but perhaps a final CR, which may start a CRLF
      let i = carried > 0 ? carried - 1 : 0;
      while (i < n) {
        const c = buf.charCodeAt(i);
        if (c !== LF && c !== CR) {
          i++;
          continue;
        }
        let next = i + 1;
        if (c === CR) {
          // a CR at the end of the text may be the first half of a CRLF: wait for more
          if (next === n) break;
          if (buf.charCodeAt(next) === LF) next++;
        }
        const ev = this.line(buf, pos, i);
        pos = next;
        i = next;
        if (ev) out.push(ev);
      }
    }
    this.buf = pos === 0 ? buf : pos < buf.length ? buf.slice(pos) : "";
    return out;
  }

  /** Ends the stream: a trailing event without its blank line is still dispatched. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    let rest = this.buf;
    this.buf = "";
    // a final CR ends its line
    if (rest.charCodeAt(rest.length - 1) === CR) rest = rest.slice(0, -1);
    if (rest.length > 0) {
      const ev = this.line(rest, 0, rest.length);
      if (ev) out.push(ev);
    }
    const last = this.dispatch();
    if (last) out.push(last);
    return out;
  }

  /** Handles the line `buf[start, end)`. */
  private line(buf: string, start: number, end: number): SseEvent | undefined {
    if (start === end) return this.dispatch();
    const c0 = buf.charCodeAt(start);
    if (c0 === COLON) return undefined;
    // the common case first: `data: …`
    if (c0 === 100 /* d */ && buf.startsWith("data:", start) && start + 5 <= end) {
      let v = start + 5;
      if (v < end && buf.charCodeAt(v) === SPACE) v++;
      this.addData(buf.slice(v, end));
      return undefined;
    }
    let colon = buf.indexOf(":", start);
    if (colon < 0 || colon > end) colon = end;
    const field = buf.slice(start, colon);
    let v = colon < end ? colon + 1 : end;
    if (v < end && buf.charCodeAt(v) === SPACE) v++;
    const value = buf.slice(v, end);
    if (field === "data") this.addData(value);
    else if (field === "event") this.event = value;
    else if (field === "id") this.id = value;
    return undefined;
  }

  private addData(value: string): void {
    if (this.data === undefined) this.data = value;
    else if (this.moreData === undefined) this.moreData = [value];
    else this.moreData.push(value);
  }

  private dispatch(): SseEvent | undefined {
    if (this.data === undefined) {
      this.event = undefined;
      return undefined;
    }
    const data = this.moreData ? [this.data, ...this.moreData].join("\n") : this.data;
    const ev: { event?: string; data: string; id?: string } = { data };
    if (this.event !== undefined) ev.event = this.event;
    if (this.id !== undefined) ev.id = this.id;
    this.data = undefined;
    this.moreData = undefined;
    this.event = undefined;
    return ev;
  }
}

/**
 * Decodes UTF-8 chunks to text, holding back a multi-byte character cut at a chunk's end until the
 * next chunk completes it. Invalid bytes become U+FFFD.
 */
export class Utf8ChunkDecoder {
  private carry: Buffer | undefined;

  write(chunk: Uint8Array): string {
    let b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.carry) {
      b = Buffer.concat([this.carry, b]);
      this.carry = undefined;
    }
    const cut = completeUtf8Length(b);
    if (cut < b.length) this.carry = Buffer.from(b.subarray(cut));
    return b.toString("utf8", 0, cut);
  }

  end(): string {
    const rest = this.carry;
    this.carry = undefined;
    return rest ? rest.toString("utf8") : "";
  }
}

/** The length of `b` without a trailing, incomplete UTF-8 sequence. */
function completeUtf8Length(b: Uint8Array): number {
  const n = b.length;
  for (let i = n - 1; i >= 0 && i >= n - 4; i--) {
    const c = b[i]!;
    if ((c & 0xc0) === 0x80) continue; // a continuation byte: look further back
    const need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    return i + need > n ? i : n;
  }
  return n;
}

/** Parses a byte stream (a fetch body, a Node stream) into SSE events. */
export async function* parseSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new Utf8ChunkDecoder();
  const parser = new SseParser();
  for await (const chunk of body) {
    const events = parser.push(decoder.write(chunk));
    for (let i = 0; i < events.length; i++) yield events[i]!;
  }
  for (const ev of parser.push(decoder.end())) yield ev;
  for (const ev of parser.end()) yield ev;
}

/** Encodes one event; multi-line data becomes several `data:` lines. */
export function encodeSse(ev: SseEvent): string {
  let out = "";
  if (ev.event !== undefined) out += `event: ${ev.event}\n`;
  if (ev.id !== undefined) out += `id: ${ev.id}\n`;
  // JSON payloads hold no line ends: one data line
  if (ev.data.indexOf("\n") < 0 && ev.data.indexOf("\r") < 0) return `${out}data: ${ev.data}\n\n`;
  for (const line of ev.data.split(/\r\n|\n|\r/)) out += `data: ${line}\n`;
  return `${out}\n`;
}
