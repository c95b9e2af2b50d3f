/**
 * Server-sent events, as OpenAI and Anthropic stream them: parse an upstream byte stream into
 * events, and encode events for a client. Follows the WHATWG event-stream rules that matter here:
 * LF, CRLF or CR line ends; `data:` lines joined with LF; `:` comments ignored; an event is
 * dispatched at a blank line; one optional space after the colon is dropped.
 */

export interface SseEvent {
  readonly event?: string;
  readonly data: string;
  readonly id?: string;
}

/** Incremental parser: feed text, get whole events back. */
export class SseParser {
  private buf = "";
  private data: string[] = [];
  private event: string | undefined;
  private id: string | undefined;

  /** Feeds a chunk of text; returns the events it completed. */
  push(text: string): SseEvent[] {
    this.buf += text;
    const out: SseEvent[] = [];
    for (;;) {
      const m = /\r\n|\n|\r/.exec(this.buf);
      if (!m) break;
      // A lone CR at the end of the buffer may be the first half of a CRLF: wait for more.
      if (m[0] === "\r" && m.index === this.buf.length - 1) break;
      const line = this.buf.slice(0, m.index);
      this.buf = this.buf.slice(m.index + m[0].length);
      const ev = this.line(line);
      if (ev) out.push(ev);
    }
    return out;
  }

  /** Ends the stream: a trailing event without its blank line is still dispatched. */
  end(): SseEvent[] {
    const out: SseEvent[] = [];
    if (this.buf.length > 0) {
      const ev = this.line(this.buf);
      this.buf = "";
      if (ev) out.push(ev);
    }
    const last = this.dispatch();
    if (last) out.push(last);
    return out;
  }

  private line(line: string): SseEvent | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.event = value;
    else if (field === "id") this.id = value;
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    if (this.data.length === 0) {
      this.event = undefined;
      return undefined;
    }
    const ev: { event?: string; data: string; id?: string } = { data: this.data.join("\n") };
    if (this.event !== undefined) ev.event = this.event;
    if (this.id !== undefined) ev.id = this.id;
    this.data = [];
    this.event = undefined;
    return ev;
  }
}

/** Parses a byte stream (a fetch body, a Node stream) into SSE events. */
export async function* parseSse(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  const parser = new SseParser();
  for await (const chunk of body) {
    for (const ev of parser.push(decoder.decode(chunk, { stream: true }))) yield ev;
  }
  for (const ev of parser.push(decoder.decode())) yield ev;
  for (const ev of parser.end()) yield ev;
}

/** Encodes one event; multi-line data becomes several `data:` lines. */
export function encodeSse(ev: SseEvent): string {
  let out = "";
  if (ev.event !== undefined) out += `event: ${ev.event}\n`;
  if (ev.id !== undefined) out += `id: ${ev.id}\n`;
  for (const line of ev.data.split(/\r\n|\n|\r/)) out += `data: ${line}\n`;
  return `${out}\n`;
}
