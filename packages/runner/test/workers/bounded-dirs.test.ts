import { open } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { makeBoundedDirs, unboundedDiskOver } from "../../src/workers/bounded-dirs.js";
import type { WorkerSpec } from "../../src/workers/types.js";
import { tempDir as makeTempDir } from "../helpers/temp-dir.js";

// The worker's state tmpfs (HOME, /tmp, the core's config) filled by the agent's commands is the
// disk limit (issue 42): the core would be left without room for its task's files, and the end
// is the policy's, scored — never an infra failure. A real tmpfs of 4 MiB, mounted as root.
const root = process.getuid?.() === 0;
if (!root) console.log("skipped the full state tmpfs: mounting a tmpfs needs root");

const spec = { workspace: "/nonexistent", limits: { memoryMb: 1, pids: 1, wallClockMs: 1 } } as WorkerSpec;

describe.skipIf(!root)("bounded dirs: the state tmpfs full", () => {
  it("is not over while there is room; full, it is the reason to end the worker", async () => {
    await using tmp = await makeTempDir("flakegym-bounded-");
    const dirs = await makeBoundedDirs(tmp.path, 4);
    try {
      expect(dirs.bounded).toBe(true);
      expect(await unboundedDiskOver(spec, true, dirs)).toBeUndefined();
      const f = await open(join(dirs.tmp, "fill"), "w");
      const chunk = Buffer.alloc(64 * 1024, 1);
      try {
        for (;;) await f.write(chunk);
      } catch (err) {
        expect((err as NodeJS.ErrnoException).code).toBe("ENOSPC");
      } finally {
        await f.close();
      }
      expect(await unboundedDiskOver(spec, true, dirs)).toMatch(
        /HOME, \/tmp and the core's config are full \(their 4 MiB tmpfs\)/,
      );
    } finally {
      await dirs.release();
    }
  });
});
