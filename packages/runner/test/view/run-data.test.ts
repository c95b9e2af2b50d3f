import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { indexGroupLines } from "../../src/view/group-lines.js";
import { openSafeRoot } from "../../src/view/safe-read.js";

let dir: string;
const line = (task: string, pad: number) =>
  JSON.stringify({
    tokens: [[1, 2, 3]],
    scores: [1],
    messages: [[{ role: "user", content: `"group_overrides":{"group_id":"fake ${"x".repeat(pad)}` }]],
    group_overrides: { group_id: `run:${task}`, task_id: task, run_id: "run" },
  });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flakegym-view-idx-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("indexGroupLines", () => {
  it("maps each task to its line's byte span, whatever the chunk size", async () => {
    const lines = [line("a", 10), line('b"q', 300), line("c", 5000)];
    const text = `${lines.join("\n")}\n${line("d", 7)}`; // the last line has no newline yet
    await writeFile(join(dir, "groups.jsonl"), text);
    const root = await openSafeRoot(dir);
    for (const chunk of [7, 64, 1000, 1 << 20]) {
      const idx = await indexGroupLines(root, ["groups.jsonl"], Buffer.byteLength(text), chunk);
      expect([...idx.keys()].sort(), `chunk ${chunk}`).toEqual(["a", 'b"q', "c", "d"]);
      for (const [task, [from, to]] of idx) {
        const parsed = JSON.parse(text.slice(from, to)) as { group_overrides: { task_id: string } };
        expect(parsed.group_overrides.task_id).toBe(task);
      }
    }
  });

  it("stops between chunks once its signal is aborted (a stopping viewer does not read on)", async () => {
    const text = `${line("a", 10)}\n${line("b", 10)}\n`;
    await writeFile(join(dir, "groups.jsonl"), text);
    const root = await openSafeRoot(dir);
    const ac = new AbortController();
    ac.abort(new Error("stopping"));
    await expect(
      indexGroupLines(root, ["groups.jsonl"], Buffer.byteLength(text), 16, ac.signal),
    ).rejects.toThrow("stopping");
  });
});
