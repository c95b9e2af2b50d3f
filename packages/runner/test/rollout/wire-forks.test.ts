import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { forkIn, unforked } from "../../src/rollout/wire-forks.js";
import type { Snapshot } from "../../src/snapshots/manifest.js";

describe("an attempt's fork where the backend's workers bring their own workspace (hostForks false)", () => {
  it("makes nothing: the snapshot's own tree, nothing to release", async () => {
    const u = unforked({ tree: "/snap/tree" });
    expect(u).toMatchObject({
      method: "none",
      tree: "/snap/tree",
      workspace: join("/snap/tree", "workspace"),
      deps: join("/snap/tree", "deps"),
      forkMs: 0,
    });
    expect(await u.release()).toEqual([]);
  });

  it("forkIn without host forks touches neither the scratch dir nor the snapshot", async () => {
    const scratch = await mkdtemp(join(tmpdir(), "fg-unforked-"));
    try {
      // a snapshot dir that does not exist: a real fork would fail (E_SNAPSHOT)
      const snapshot = { dir: join(scratch, "gone"), tree: join(scratch, "gone", "tree") } as Snapshot;
      const f = await forkIn(scratch, snapshot, "t0", 100, new AbortController().signal, false);
      expect(f.method).toBe("none");
      await expect(forkIn(scratch, snapshot, "t0", 100, new AbortController().signal)).rejects.toThrow(
        /incomplete or was removed/,
      );
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
