import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  CORE_GC_PRELOAD_PATH,
  probeMappedCore,
  probeOneByteCore,
  resolveClinePackage,
} from "@flakegym/cline-vendor";
import { execa } from "execa";
import { describe, expect, it } from "vitest";
import { flakegymCacheRoot } from "../../../packages/runner/src/cache-root.mjs";

// The built directory (npm ci builds it): the addon and the preload, run in real Node processes.
const cacheRoot = flakegymCacheRoot(process.env);
const built = probeMappedCore(probeOneByteCore(resolveClinePackage(), cacheRoot), cacheRoot);
const skip = built.on ? "" : `the mapped source is not built here: ${built.reason}`;
if (skip) console.log(`mapped-core: addon tests skipped (${skip})`);

const node = async (args: string[]) => (await execa(process.execPath, args, { timeout: 60_000 })).stdout;

describe.skipIf(skip !== "")("the built addon and preload (real Node)", () => {
  const dir = built.on ? built.dir : "";

  it("maps a file's bytes as the Latin-1 string Node decodes from them, and names a missing file", async () => {
    const tmp = await mkdtemp(join(tmpdir(), "flakegym-mapped-"));
    try {
      const bytes = Buffer.from(Array.from({ length: 3000 }, (_, i) => (i * 7) % 256));
      await writeFile(join(tmp, "f.bin"), bytes);
      const script = `const a = require(${JSON.stringify(join(dir, "core-memory.node"))});
        const s = a.mapLatin1(${JSON.stringify(join(tmp, "f.bin"))});
        const want = require("fs").readFileSync(${JSON.stringify(join(tmp, "f.bin"))}).toString("latin1");
        let missing = ""; try { a.mapLatin1(${JSON.stringify(join(tmp, "nope"))}); } catch (e) { missing = e.message; }
        console.log(JSON.stringify({ same: s === want, length: s.length, trim: typeof a.trim(), missing }));`;
      const r = JSON.parse(await node(["-e", script]));
      expect(r).toEqual({
        same: true,
        length: 3000,
        trim: "boolean",
        missing: `core-memory: cannot open ${join(tmp, "nope")}: No such file or directory`,
      });
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });

  it("leaves every other script to Node, and core-gc's collection trims through it", async () => {
    const tmp = await mkdtemp(join(tmpdir(), "flakegym-mapped-"));
    try {
      await writeFile(
        join(tmp, "main.js"),
        `process.once("SIGURG", () => setImmediate(() => console.log("collected")));
         console.log("main " + (typeof process[Symbol.for("flakegym.core.trim")]));
         process.kill(process.pid, "SIGURG"); setTimeout(() => {}, 500);`,
      );
      const out = await execa(
        process.execPath,
        ["--require", CORE_GC_PRELOAD_PATH, "--require", join(dir, "core-memory.cjs"), join(tmp, "main.js")],
        { timeout: 60_000 },
      );
      expect(out.stdout.split("\n")).toEqual(["main function", "collected"]);
      expect(out.stderr).toMatch(/^flakegym-core-gc 1 heap-used-mib [\d.]+ cpu-ms \d+$/m);
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
