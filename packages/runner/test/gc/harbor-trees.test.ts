import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  holdHarborTree,
  isHarborTree,
  TREE_DONE_MARK,
  treeLockOf,
  USE_DIR,
  useFileOf,
} from "../../src/gc/harbor-tree-use.js";
import {
  type HarborTree,
  planHarborTrees,
  removeHarborTree,
  scratchPidOf,
} from "../../src/gc/harbor-trees.js";
import { acquireLock } from "../../src/gc/lock.js";
import { selfOwner } from "../../src/gc/owner.js";
import { formatSweepResult, sweepLeftovers } from "../../src/gc/sweep.js";

const DAY = 86_400_000;

describe("planHarborTrees", () => {
  const now = 100 * DAY;
  const tree = (name: string, lastUsedMs: number, liveUsers: number[] = []): HarborTree => ({
    kind: "tree",
    name,
    path: `/c/harbor-rootfs/${name}`,
    lastUsedMs,
    liveUsers,
  });

  it("keeps every finished tree without --harbor-unused-days, removes only dead builds' scratch copies", () => {
    const p = planHarborTrees(
      [
        tree("abc", 0),
        { kind: "scratch", name: "abc.tmp-41-1", path: "/c/harbor-rootfs/abc.tmp-41-1", pid: 41, mtimeMs: 0 },
        {
          kind: "scratch",
          name: "base-x.tmp-42-1",
          path: "/c/harbor-rootfs/base-x.tmp-42-1",
          pid: 42,
          mtimeMs: 0,
        },
        {
          kind: "scratch",
          name: "abc.tmp-43-1",
          path: "/c/harbor-rootfs/abc.tmp-43-1",
          pid: 43,
          mtimeMs: now,
        },
      ],
      { livePids: new Set([42]), nowMs: now },
    );
    expect(p.remove.map((r) => [r.name, r.scratch])).toEqual([["abc.tmp-41-1", true]]);
    expect(p.kept).toEqual([
      { name: "abc", inUse: false, why: "a cache (no --harbor-unused-days)" },
      { name: "base-x.tmp-42-1", inUse: true, why: "its build (pid 42) still runs" },
      { name: "abc.tmp-43-1", inUse: false, why: "a scratch copy younger than the stale bound" },
    ]);
  });

  it("with an age, removes unused old trees; a live user keeps even an old one", () => {
    const p = planHarborTrees([tree("old", now - 9 * DAY), tree("fresh", now - DAY), tree("held", 0, [77])], {
      livePids: new Set(),
      nowMs: now,
      unusedMs: 7 * DAY,
    });
    expect(p.remove).toEqual([
      { path: "/c/harbor-rootfs/old", name: "old", scratch: false, why: "unused for 9.0 d" },
    ]);
    expect(p.kept.map((k) => [k.name, k.inUse, k.why])).toEqual([
      ["fresh", false, "last used 1.0 d ago"],
      ["held", true, "in use by pid 77"],
    ]);
  });

  it("reads the pid of a build's scratch name and of a killed removal's", () => {
    expect(scratchPidOf("3f2a.tmp-1234-1733500000000")).toBe(1234);
    expect(scratchPidOf("base-3f2a.tmp-9-1")).toBe(9);
    expect(scratchPidOf(".gc-3f2a-55")).toBe(55);
    expect(scratchPidOf("3f2a")).toBeUndefined();
    expect(isHarborTree("/x/harbor-rootfs/3f2a")).toBe(true);
    expect(isHarborTree("/x/harbor-rootfs/3f2a.tmp-1-2")).toBe(false);
    expect(isHarborTree("/x/other/3f2a")).toBe(false);
  });
});

async function cacheWithTrees(names: string[]): Promise<{ cache: string; trees: string }> {
  const cache = await mkdtemp(join(tmpdir(), "flakegym-hgc-"));
  const trees = join(cache, "harbor-rootfs");
  for (const n of names) {
    await mkdir(join(trees, n, "usr", "bin"), { recursive: true });
    await writeFile(join(trees, n, "usr", "bin", "tool"), "x");
    await writeFile(join(trees, n, TREE_DONE_MARK), "{}\n");
  }
  return { cache, trees };
}

const deadPid = () => spawnSync(process.execPath, ["-e", "0"]).pid;

describe("flakegym gc on built Harbor trees (real directories, real locks)", () => {
  it("never removes a tree a live process holds; removes an unused one and a dead build's scratch copy", async () => {
    const { cache, trees } = await cacheWithTrees(["held", "unused", "stale-user"]);
    try {
      expect(await holdHarborTree(join(trees, "held"))).toBe(true);
      // a user that ran and is gone does not keep a tree
      const gone = { ...selfOwner(), pid: deadPid(), startTime: "1" };
      await mkdir(join(trees, USE_DIR, "stale-user"), { recursive: true });
      await writeFile(join(trees, USE_DIR, "stale-user", useFileOf(gone)), JSON.stringify(gone));
      const scratch = join(trees, `unused.tmp-${deadPid()}-1`);
      await mkdir(join(scratch, "etc"), { recursive: true });
      const old = new Date(Date.now() - 3 * DAY);
      await utimes(scratch, old, old);
      for (const n of ["held", "unused", "stale-user"])
        await utimes(join(trees, n, TREE_DONE_MARK), old, old);

      const kept = await sweepLeftovers({
        cacheRoot: cache,
        roots: [],
        podman: false,
        tempRoots: [],
        dryRun: true,
      });
      expect(kept.plan.actions.filter((a) => a.kind.startsWith("harbor"))).toEqual([
        { kind: "harbor-scratch", path: scratch },
      ]);

      const done = await sweepLeftovers({
        cacheRoot: cache,
        roots: [],
        podman: false,
        tempRoots: [],
        harborUnusedMs: DAY,
      });
      const harbor = done.results.filter((r) => r.action.kind.startsWith("harbor"));
      expect(harbor.every((r) => r.ok)).toBe(true);
      expect(harbor.map((r) => formatSweepResult(r, false))).toEqual([
        "done: remove the built Harbor tree stale-user (unused for 3.0 d)",
        "done: remove the built Harbor tree unused (unused for 3.0 d)",
        `done: remove a dead Harbor environment build's scratch copy ${scratch}`,
      ]);
      expect((await readdir(trees)).sort()).toEqual([".locks", USE_DIR, "held"].sort());
      expect(existsSync(join(trees, "held", "usr", "bin", "tool"))).toBe(true);
      expect(done.plan.live).toBeGreaterThanOrEqual(1);
      // removed: a later user is told, not handed an empty tree
      expect(await holdHarborTree(join(trees, "unused"))).toBe(false);
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  });

  it("a tree whose lock is held (a user registering) is left alone, named", async () => {
    const { cache, trees } = await cacheWithTrees(["busy"]);
    try {
      const release = await acquireLock(treeLockOf(trees, "busy"));
      await expect(removeHarborTree(cache, "busy", 300)).rejects.toThrow(/tree busy is being taken into use/);
      await release();
      expect(existsSync(join(trees, "busy", TREE_DONE_MARK))).toBe(true);
      expect(await removeHarborTree(cache, "busy")).toBe("");
      expect(existsSync(join(trees, "busy"))).toBe(false);
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  });
});
