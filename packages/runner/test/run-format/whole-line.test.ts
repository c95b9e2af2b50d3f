import { execFileSync } from "node:child_process";
import { mkdtemp, open, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendJsonLine } from "../../src/run-format/jsonl.js";
import { appendWholeLine } from "../../src/run-format/whole-line.js";

/** A real 64 KiB tmpfs (needs root); the tests say why they skip without it. */
let mnt: string | undefined;
let why = "";
beforeAll(async () => {
  const dir = await mkdtemp(join(tmpdir(), "fg-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", dir], { stdio: "pipe" });
    mnt = dir;
  } catch (err) {
    why = `cannot mount a tmpfs here: ${(err as Error).message.split("\n")[0]}`;
    console.log(`skipped the full-disk tests: ${why}`);
    await rm(dir, { recursive: true, force: true });
  }
});
afterAll(async () => {
  if (!mnt) return;
  execFileSync("umount", ["-l", mnt]);
  await rm(mnt, { recursive: true, force: true });
});

describe("a full disk", () => {
  it("appendJsonLine: whole lines or nothing, and the error names the file and what to do", async (t) => {
    if (!mnt) return t.skip(why);
    const file = join(mnt, "metrics.jsonl");
    const value = { pad: "x".repeat(3000) };
    let err: unknown;
    for (let i = 0; i < 100 && !err; i++) await appendJsonLine(file, value).catch((e: unknown) => (err = e));
    expect(err).toMatchObject({ code: "E_DISK_FULL", message: expect.stringContaining(file) });
    expect((err as { hint: string }).hint).toMatch(/free space .*--resume/);
    const text = await readFile(file, "utf8");
    expect(text.endsWith("\n")).toBe(true);
    for (const l of text.split("\n").filter(Boolean)) expect(JSON.parse(l)).toEqual(value);
    await rm(file);
  });

  it("appendWholeLine: a line larger than the space left is not written at all", async (t) => {
    if (!mnt) return t.skip(why);
    const file = join(mnt, "turns.jsonl");
    const fh = await open(file, "a");
    try {
      await appendWholeLine(fh, Buffer.from('{"a":1}\n'), file);
      const big = Buffer.from(`${JSON.stringify({ b: "y".repeat(200_000) })}\n`);
      await expect(appendWholeLine(fh, big, file)).rejects.toMatchObject({ code: "E_DISK_FULL" });
    } finally {
      await fh.close();
    }
    expect(await readFile(file, "utf8")).toBe('{"a":1}\n');
  });
});
