import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findTempFiles } from "../../src/gc/stale-temps.js";

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "fg-stale-temps-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("findTempFiles", () => {
  it("finds each temp once when one root lies inside another (gc --dir under the default roots)", async () => {
    const dir = join(tmp, "run", "export");
    await mkdir(join(dir, ".atif.999999.abcdef123456.tmp"), { recursive: true });
    await writeFile(join(dir, ".verl.jsonl.999999.abcdef123456.tmp"), "x");
    const found = await findTempFiles([tmp, join(tmp, "run"), dir]);
    expect(found.map((f) => f.path).sort()).toEqual([
      join(dir, ".atif.999999.abcdef123456.tmp"),
      join(dir, ".verl.jsonl.999999.abcdef123456.tmp"),
    ]);
    expect(found.every((f) => f.pid === 999999)).toBe(true);
  });
});
