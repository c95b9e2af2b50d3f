import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  appendJsonLine,
  parseJsonl,
  readJsonl,
  repairJsonl,
  writeJsonAtomic,
  writeStreamAtomic,
} from "../../src/run-format/jsonl.js";

/** A temp directory removed by cleanup(). */
async function tempDir(prefix = "flakegym-test-") {
  const path = await mkdtemp(join(tmpdir(), prefix));
  return { path, cleanup: () => rm(path, { recursive: true, force: true }) };
}

let tmp: { path: string; cleanup(): Promise<void> };
beforeEach(async () => {
  tmp = await tempDir();
});
afterEach(async () => {
  await tmp.cleanup();
});

describe("appendJsonLine / readJsonl", () => {
  it("round-trips records, one per line, and reads a missing file as empty", async () => {
    const f = join(tmp.path, "a.jsonl");
    expect(await readJsonl(f)).toEqual({ records: [], tornBytes: 0 });
    await appendJsonLine(f, { a: 1 });
    await appendJsonLine(f, { b: "two\nlines" });
    expect(await readFile(f, "utf8")).toBe('{"a":1}\n{"b":"two\\nlines"}\n');
    expect((await readJsonl(f)).records).toEqual([{ a: 1 }, { b: "two\nlines" }]);
  });

  it("concurrent appends from one process never interleave", async () => {
    const f = join(tmp.path, "c.jsonl");
    const big = "x".repeat(50_000);
    await Promise.all(Array.from({ length: 40 }, (_, i) => appendJsonLine(f, { i, big })));
    const { records, tornBytes } = await readJsonl(f, z.object({ i: z.number(), big: z.string() }));
    expect(tornBytes).toBe(0);
    expect(records.map((r) => r.i).sort((a, b) => a - b)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(records.every((r) => r.big === big)).toBe(true);
  });

  it("ignores a torn last line and repair truncates exactly it", async () => {
    const f = join(tmp.path, "t.jsonl");
    await appendJsonLine(f, { ok: 1 });
    await appendFile(f, '{"half":');
    const r = await readJsonl(f);
    expect(r.records).toEqual([{ ok: 1 }]);
    expect(r.tornBytes).toBe(8);
    expect(await repairJsonl(f)).toBe(8);
    expect(await readFile(f, "utf8")).toBe('{"ok":1}\n');
    expect(await repairJsonl(f)).toBe(0);
    await appendJsonLine(f, { ok: 2 });
    expect((await readJsonl(f)).records).toEqual([{ ok: 1 }, { ok: 2 }]);
  });

  it("a file that is only a torn line reads as empty and repairs to zero bytes", async () => {
    const f = join(tmp.path, "only.jsonl");
    await writeFile(f, '{"x"');
    expect(await readJsonl(f)).toEqual({ records: [], tornBytes: 4 });
    expect(await repairJsonl(f)).toBe(4);
    expect(await readFile(f, "utf8")).toBe("");
  });

  it("a corrupt complete line is an error naming the file and line", () => {
    expect(() => parseJsonl('{"a":1}\nnot json\n{"b":2}\n', "runs/x/groups.jsonl")).toThrow(
      /runs\/x\/groups\.jsonl: line 2 is not valid JSON/,
    );
  });

  it("a schema mismatch names the line and field", () => {
    expect(() => parseJsonl('{"n":1}\n{"n":"x"}\n', "m.jsonl", z.object({ n: z.number() }))).toThrow(
      /m\.jsonl: line 2: field 'n'/,
    );
  });

  it("a process killed with SIGKILL while appending leaves only whole lines", async () => {
    const f = join(tmp.path, "killed.jsonl");
    const script = `
      import { appendJsonLine } from ${JSON.stringify(new URL("../../src/run-format/jsonl.ts", import.meta.url).pathname)};
      const pad = "y".repeat(200_000);
      for (let i = 0; ; i++) await appendJsonLine(${JSON.stringify(f)}, { i, pad });
    `;
    const child = execa(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      reject: false,
    });
    // let it write a good number of lines, then kill it without warning
    for (let i = 0; i < 200; i++) {
      const size = await readFile(f).then(
        (b) => b.length,
        () => 0,
      );
      if (size > 5_000_000) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    child.kill("SIGKILL");
    await child;
    const { records } = await readJsonl(f, z.object({ i: z.number(), pad: z.string() }));
    expect(records.length).toBeGreaterThan(3);
    expect(records.map((r) => r.i)).toEqual(records.map((_, i) => i));
    await repairJsonl(f);
    const text = await readFile(f, "utf8");
    expect(text.endsWith("\n")).toBe(true);
  });
});

describe("writeJsonAtomic", () => {
  it("replaces the file whole and leaves no temp files", async () => {
    const f = join(tmp.path, "s.json");
    await writeJsonAtomic(f, { v: 1 });
    await writeJsonAtomic(f, { v: 2 });
    expect(JSON.parse(await readFile(f, "utf8"))).toEqual({ v: 2 });
    expect(await readdir(tmp.path)).toEqual(["s.json"]);
  });
});

describe("writeStreamAtomic", () => {
  async function* pieces(n: number, onPiece?: (i: number) => void) {
    for (let i = 0; i < n; i++) {
      onPiece?.(i);
      yield `piece ${i} fg-${"B".repeat(32)}\n`;
    }
  }

  it("writes every piece, redacted, and the file appears only whole", async () => {
    const file = join(tmp.path, "out.html");
    const bytes = await writeStreamAtomic(file, pieces(3));
    const text = await readFile(file, "utf8");
    expect(text).toBe("piece 0 [redacted]\npiece 1 [redacted]\npiece 2 [redacted]\n");
    expect(bytes).toBe(Buffer.byteLength(text));
    expect(await readdir(tmp.path)).toEqual(["out.html"]);
  });

  it("an abort between pieces stops it and leaves neither the file nor a temporary one", async () => {
    const file = join(tmp.path, "out.html");
    const ac = new AbortController();
    let asked = 0;
    const run = writeStreamAtomic(
      file,
      pieces(1000, (i) => {
        asked = i + 1;
        if (i === 5) ac.abort(new Error("SIGTERM"));
      }),
      ac.signal,
    );
    await expect(run).rejects.toThrow("SIGTERM");
    expect(asked).toBe(6); // no piece is asked for after the abort
    expect(await readdir(tmp.path)).toEqual([]);
  });

  it("a failing source is an error naming the file, with nothing left behind", async () => {
    const file = join(tmp.path, "out.html");
    async function* broken() {
      yield "start";
      throw new Error("the run dir vanished");
    }
    await expect(writeStreamAtomic(file, broken())).rejects.toThrow(/out\.html/);
    expect(await readdir(tmp.path)).toEqual([]);
  });
});
