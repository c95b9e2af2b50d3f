import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  encodeTurnLine,
  parseTurnLog,
  readTurnLog,
  TurnLogWriter,
  type TurnRecord,
} from "../../src/gateway/turn-log.js";
import { ChatRequest } from "../../src/policy/chat.js";
import { asIntArrayJson } from "../../src/policy/prompt-ids-json.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-turnlog-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const record = (trajectoryId: string, seq: number, size: number): TurnRecord => ({
  v: 1,
  trajectoryId,
  seq,
  startedAt: new Date(0).toISOString(),
  protocol: "openai",
  stream: true,
  upstream: "scripted:x",
  status: "ok",
  request: { model: "m", messages: [{ role: "user", content: "x".repeat(size) }] },
  response: { text: `answer ${seq}`, toolCalls: [], finishReason: "stop" },
  latency: { firstByteMs: 1, totalMs: 2 },
});

describe("turn log", () => {
  it("keeps every line whole when two writers append large lines to one file at once", async () => {
    const path = join(dir, "shared", "turns.jsonl");
    const a = new TurnLogWriter(path);
    const b = new TurnLogWriter(path);
    // lines far larger than PIPE_BUF, interleaved from two file descriptors
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        (i % 2 ? a : b).append(record(i % 2 ? "a" : "b", i + 1, 200_000 + i)),
      ),
    );
    await Promise.all([a.close(), b.close()]);
    const records = await readTurnLog(path);
    expect(records).toHaveLength(40);
    expect(records.map((r) => r.seq).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 40 }, (_, i) => i + 1),
    );
    // one writer's lines stay in its append order
    const seqsA = records.filter((r) => r.trajectoryId === "a").map((r) => r.seq);
    expect(seqsA).toEqual([...seqsA].sort((x, y) => x - y));
  });

  it("names the file and line of a bad record", async () => {
    const path = join(dir, "bad.jsonl");
    await writeFile(path, `${JSON.stringify(record("t", 1, 1))}\n{"v":1}\n`);
    await expect(readTurnLog(path)).rejects.toThrow(/bad\.jsonl line 2: trajectoryId: /);
    expect(() => parseTurnLog('{"v":1,\n', "x.jsonl")).toThrow(/x\.jsonl line 1 is not JSON/);
    await expect(readTurnLog(join(dir, "none.jsonl"))).rejects.toThrow(/cannot read turn log .*none\.jsonl/);
    expect(await readFile(path, "utf8")).toContain('"seq":1');
  });

  it("writes the client's request bytes as the request when they are one valid UTF-8 line", () => {
    const body = {
      model: "m",
      messages: [
        { role: "system", content: 'sys \u2028 ünï "q" \\' },
        {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "c1", function: { name: "f", arguments: "{}" } }],
        },
      ],
      stream: true,
      extra_field: { kept: [1, 2.5, null] },
    };
    const request = ChatRequest.parse(body);
    const rec: TurnRecord = { ...record("t", 3, 10), request, error: "multi\nline" };
    const compact = Buffer.from(JSON.stringify(body));
    const spliced = encodeTurnLine(rec, compact);
    expect(spliced.includes(compact)).toBe(true);
    expect(spliced.at(-1)).toBe(10);
    expect(spliced.subarray(0, -1).includes(10)).toBe(false);
    // a reader gets the same record either way (ChatRequest fills in the tool call's type again)
    expect(parseTurnLog(spliced.toString())).toEqual(parseTurnLog(encodeTurnLine(rec).toString()));
    expect(parseTurnLog(spliced.toString())[0]).toEqual(rec);
    // line breaks or invalid UTF-8 in the body: the request is serialized instead
    const pretty = Buffer.from(JSON.stringify(body, null, 2));
    const bad = Buffer.concat([compact.subarray(0, 20), Buffer.of(0xff), compact.subarray(20)]);
    for (const b of [pretty, bad]) {
      const line = encodeTurnLine(rec, b);
      expect(line.includes(b)).toBe(false);
      expect(line.equals(encodeTurnLine(rec))).toBe(true);
    }
  });

  it("writes lifted prompt ids (the server's text) where the parsed ones went: a reader sees the same record", () => {
    const ids = Array.from({ length: 500 }, (_, i) => (i * 31) % 9000);
    const idsJson = asIntArrayJson(JSON.stringify(ids))!;
    const response = { text: "ok", toolCalls: [], finishReason: "stop" as const, tokens: { ids: [5, 6] } };
    const body = { model: "m", messages: [{ role: "user", content: "hi" }], stream: true };
    const rec: TurnRecord = { ...record("t", 1, 2), request: ChatRequest.parse(body), response };
    const parsedIds = { ...rec, response: { ...response, tokens: { ids: [5, 6], promptIds: ids } } };
    for (const requestJson of [Buffer.from(JSON.stringify(body)), undefined]) {
      const line = encodeTurnLine(rec, requestJson, idsJson).toString();
      expect(line).toContain(idsJson);
      expect(line).not.toContain("prompt-ids-");
      expect(parseTurnLog(line)[0]).toEqual(parsedIds);
      expect(line).toBe(encodeTurnLine(parsedIds, requestJson).toString());
    }
    // without a response there is nowhere to put them
    const { response: _none, ...bare } = rec;
    expect(encodeTurnLine(bare, undefined, idsJson).toString()).not.toContain(idsJson);
  });
});
