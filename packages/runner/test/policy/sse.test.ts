import { describe, expect, it } from "vitest";
import { encodeSse, parseSse, SseParser } from "../../src/policy/sse.js";

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

  it("gives the same events as a reference parser however the bytes are cut", async () => {
    let seed = 42;
    const rand = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
      return seed % n;
    };
    const lines = [
      'data: {"a":"ü✓𝄞"}',
      "data:x",
      "data",
      "event: e",
      "id: 9",
      ": c",
      "",
      "",
      "retry: 5",
      "data: [DONE]",
    ];
    for (let round = 0; round < 40; round++) {
      // LF-only streams, and streams that switch to CR or CRLF part way through
      const ends = round % 3 === 0 ? ["\n"] : ["\n", "\r\n", "\r"];
      let text = "";
      for (let i = 0; i < 60; i++) text += lines[rand(lines.length)]! + ends[i < 30 ? 0 : rand(ends.length)]!;
      const bytes = new TextEncoder().encode(text);
      const pieces: Uint8Array[] = [];
      for (let at = 0; at < bytes.length; ) {
        const len = 1 + rand(round % 2 ? 3 : 200);
        pieces.push(bytes.subarray(at, at + len));
        at += len;
      }
      async function* cut() {
        yield* pieces;
      }
      const out = [];
      for await (const ev of parseSse(cut())) out.push(ev);
      expect(out).toEqual(referenceParse(text));
    }
  });
});

/** The WHATWG event-stream algorithm, written plainly (the gateway's parser is written for speed). */
function referenceParse(text: string): { event?: string; data: string; id?: string }[] {
  const out: { event?: string; data: string; id?: string }[] = [];
  let data: string[] = [];
  let event: string | undefined;
  let id: string | undefined;
  const dispatch = () => {
    if (data.length > 0) {
      const ev: { event?: string; data: string; id?: string } = { data: data.join("\n") };
      if (event !== undefined) ev.event = event;
      if (id !== undefined) ev.id = id;
      out.push(ev);
    }
    data = [];
    event = undefined;
  };
  const all = text.split(/\r\n|\n|\r/);
  const complete = /(\r\n|\n|\r)$/.test(text) ? all.slice(0, -1) : all;
  for (const line of complete) {
    if (line === "") dispatch();
    else if (!line.startsWith(":")) {
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") data.push(value);
      else if (field === "event") event = value;
      else if (field === "id") id = value;
    }
  }
  dispatch();
  return out;
}
