import { describe, expect, it } from "vitest";
import { encodeSse, parseSse, SseParser } from "../../src/gateway/sse.js";

async function* bytes(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield new TextEncoder().encode(p);
}

async function collect(...parts: string[]) {
  const out = [];
  for await (const ev of parseSse(bytes(...parts))) out.push(ev);
  return out;
}

describe("SSE", () => {
  it("parses events split anywhere, with LF, CRLF and CR line ends, comments and multi-line data", async () => {
    const text =
      ': keep-alive\r\nevent: message_start\r\ndata: {"a":1}\r\n\r\ndata: line1\ndata: line2\n\ndata:no-space\rid: 7\r\r';
    const whole = await collect(text);
    expect(whole).toEqual([
      { event: "message_start", data: '{"a":1}' },
      { data: "line1\nline2" },
      { data: "no-space", id: "7" },
    ]);
    // byte-by-byte delivery gives the same events (a CR at a chunk end waits for a possible LF)
    expect(await collect(...text.split(""))).toEqual(whole);
  });

  it("splits multi-byte characters across chunks without damage", async () => {
    const raw = new TextEncoder().encode("data: ünï ✓\n\n");
    async function* split() {
      for (const b of raw) yield Uint8Array.of(b);
    }
    const out = [];
    for await (const ev of parseSse(split())) out.push(ev);
    expect(out).toEqual([{ data: "ünï ✓" }]);
  });

  it("dispatches a trailing event without its blank line at end of stream, drops empty events", () => {
    const p = new SseParser();
    expect(p.push("event: ping\n\ndata: [DONE]")).toEqual([]);
    expect(p.end()).toEqual([{ data: "[DONE]" }]);
  });

  it("encodes what it parses", async () => {
    const events = [{ event: "content_block_delta", data: '{"x":"a\\nb"}' }, { data: "two\nlines" }];
    expect(await collect(events.map(encodeSse).join(""))).toEqual(events);
  });
});
