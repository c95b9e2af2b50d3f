import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseTurnLog, readTurnLog, TurnLogWriter, type TurnRecord } from "../../src/gateway/turn-log.js";

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
});
