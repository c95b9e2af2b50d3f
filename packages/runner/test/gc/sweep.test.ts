import { spawnSync } from "node:child_process";
import { existsSync, lstatSync } from "node:fs";
import { lutimes, mkdir, mkdtemp, readdir, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bootId, OWNER_FILE, selfOwner, writeOwnerRecord } from "../../src/gc/owner.js";
import { formatSweepResult, sweepLeftovers } from "../../src/gc/sweep.js";

describe("sweepLeftovers", () => {
  it("removes a dead owner's dirs under its roots and keeps a live one's and an unowned one", async () => {
    const root = await mkdtemp(join(tmpdir(), "flakegym-sweep-"));
    try {
      const dead = join(root, "flakegym-rollout-dead");
      const live = join(root, "flakegym-rollout-live");
      const unowned = join(root, "flakegym-workers", "legacy");
      const deadWorker = join(root, "flakegym-workers", "w-dead");
      for (const d of [dead, live, unowned, deadWorker]) await mkdir(join(d, "config"), { recursive: true });
      await writeOwnerRecord(live, "rollout");
      const gone = { ...selfOwner(), pid: 2 ** 22 + 7, kind: "rollout", createdAt: "" };
      await writeFile(join(dead, OWNER_FILE), JSON.stringify(gone));
      await writeFile(join(deadWorker, OWNER_FILE), JSON.stringify({ ...gone, kind: "worker" }));
      const roots = [{ path: root, prefix: "flakegym-" }];

      const dry = await sweepLeftovers({ roots, dryRun: true, podman: false });
      const planned = dry.plan.actions.filter((a) => a.kind === "dir");
      expect(planned).toEqual([
        { kind: "dir", path: deadWorker },
        { kind: "dir", path: dead },
      ]);
      expect(existsSync(dead)).toBe(true);
      expect(formatSweepResult(dry.results.find((r) => r.action.kind === "dir")!, true)).toBe(
        `would: remove directory ${deadWorker}`,
      );

      const done = await sweepLeftovers({ roots, podman: false });
      expect(done.results.filter((r) => r.action.kind === "dir").every((r) => r.ok)).toBe(true);
      expect([dead, deadWorker].map(existsSync)).toEqual([false, false]);
      expect([live, unowned].map(existsSync)).toEqual([true, true]);
      expect(bootId()).toBe(selfOwner().bootId);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("sweepLeftovers: temporaries without an owner.json", () => {
  it("a killed export's `.<fmt>.jsonl.<pid>.<rand>.tmp` of a dead pid and an old empty worker dir go; a live writer's, a fresh one and a non-empty one stay", async () => {
    const root = await mkdtemp(join(tmpdir(), "flakegym-sweep-"));
    try {
      const old = new Date(Date.now() - 60 * 60_000);
      // a pid that certainly ran and is gone
      const child = spawnSync(process.execPath, ["-e", "0"]);
      const deadPid = child.pid;
      const runs = join(root, "runs", "r1", "exports");
      await mkdir(runs, { recursive: true });
      const deadTemp = join(runs, `.verl.jsonl.${deadPid}.k3j9x.tmp`);
      const liveTemp = join(runs, `.slime.jsonl.${process.pid}.a1b2.tmp`);
      const freshDead = join(runs, `.trl.jsonl.${deadPid}.zz9.tmp`);
      for (const f of [deadTemp, liveTemp, freshDead]) await writeFile(f, "{}\n");
      await utimes(deadTemp, old, old);
      await utimes(liveTemp, old, old);
      const fgRoot = join(root, "tmp");
      const emptyWorker = join(fgRoot, "flakegym-workers", "w-killed-before-owner");
      const busyWorker = join(fgRoot, "flakegym-workers", "w-with-files");
      const freshWorker = join(fgRoot, "flakegym-workers", "w-just-made");
      for (const d of [emptyWorker, busyWorker, freshWorker]) await mkdir(d, { recursive: true });
      await writeFile(join(busyWorker, "x"), "");
      await writeFile(join(emptyWorker, ".owner.json.ab12cd"), "{");
      for (const d of [emptyWorker, busyWorker]) await utimes(d, old, old);
      const o = {
        roots: [{ path: fgRoot, prefix: "flakegym-" }],
        tempRoots: [join(root, "runs")],
        cacheDirs: [],
        podman: false,
      };

      const dry = await sweepLeftovers({ ...o, dryRun: true });
      const planned = dry.plan.actions.filter((a) => a.kind === "temp" || a.kind === "empty-dir");
      expect(planned).toEqual([
        { kind: "temp", path: deadTemp },
        { kind: "empty-dir", path: emptyWorker },
      ]);
      const done = await sweepLeftovers(o);
      expect(
        done.results.filter((r) => r.action.kind === "temp" || r.action.kind === "empty-dir"),
      ).toHaveLength(2);
      expect(done.results.every((r) => r.ok)).toBe(true);
      expect([deadTemp, emptyWorker].map(existsSync)).toEqual([false, false]);
      expect([liveTemp, freshDead, busyWorker, freshWorker].map(existsSync)).toEqual([
        true,
        true,
        true,
        true,
      ]);
      expect(formatSweepResult(done.results.find((r) => r.action.kind === "temp")!, false)).toBe(
        `done: remove a dead writer's temp file ${deadTemp}`,
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("sweepLeftovers: a SIGKILLed snapshot build's scratch tree in the cache", () => {
  it("`<cache>/tmp/<key16>-<pid>-<hex8>` of a dead pid goes (tree and all); a live build's, a fresh one and other names stay", async () => {
    const root = await mkdtemp(join(tmpdir(), "flakegym-sweep-cache-"));
    try {
      const old = new Date(Date.now() - 60 * 60_000);
      const deadPid = spawnSync(process.execPath, ["-e", "0"]).pid;
      const cache = join(root, "snapshots");
      const tmp = join(cache, "tmp");
      const dead = join(tmp, `0123456789abcdef-${deadPid}-a1b2c3d4`);
      const deadProbe = join(tmp, `identity-${deadPid}-00ff00ff`);
      const live = join(tmp, `0123456789abcdef-${process.pid}-a1b2c3d4`);
      const fresh = join(tmp, `fedcba9876543210-${deadPid}-0badcafe`);
      const other = join(tmp, "not-a-build");
      for (const d of [dead, deadProbe, live, fresh, other])
        await mkdir(join(d, "tree", "workspace"), { recursive: true });
      await writeFile(join(dead, "tree", "workspace", "big.bin"), "x".repeat(1000));
      for (const d of [dead, deadProbe, live, other]) await utimes(d, old, old);
      const o = { roots: [], tempRoots: [], cacheDirs: [cache], podman: false };
      const dry = await sweepLeftovers({ ...o, dryRun: true });
      expect(
        dry.plan.actions
          .filter((a) => a.kind === "cache-temp")
          .map((a) => (a as { path: string }).path)
          .sort(),
      ).toEqual([dead, deadProbe].sort());
      const done = await sweepLeftovers(o);
      expect(done.results.filter((r) => r.action.kind === "cache-temp").every((r) => r.ok)).toBe(true);
      expect([dead, deadProbe].map(existsSync)).toEqual([false, false]);
      expect([live, fresh, other].map(existsSync)).toEqual([true, true, true]);
      expect(formatSweepResult(done.results.find((r) => r.action.kind === "cache-temp")!, false)).toMatch(
        /^done: remove a dead snapshot build's scratch tree /,
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

/** Whether `p` exists as an entry (a dangling symlink counts). */
const lexists = (p: string) => {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

describe("sweepLeftovers: the cache's writers' temps", () => {
  it("a dead writer's temp in sealed-bin, pins, a snapshot's tree record and failed goes, an eval's `latest` link temp and a directory written whole; one in a snapshot's tree or of a live writer stays", async () => {
    const root = await mkdtemp(join(tmpdir(), "flakegym-sweep-cache-temps-"));
    try {
      const old = new Date(Date.now() - 60 * 60_000);
      const deadPid = spawnSync(process.execPath, ["-e", "0"]).pid;
      const cacheRoot = join(root, "cache");
      const snaps = join(cacheRoot, "snapshots");
      const runs = join(root, "evals");
      const name = (n: string, pid: number) => `.${n}.${pid}.0a1b2c3d4e5f.tmp`;
      const dead = [
        join(cacheRoot, "sealed-bin", "0123456789abcdef", name("node", deadPid)),
        join(snaps, "pins", name("k.txt", deadPid)),
        join(snaps, "failed", "k", name("build.log", deadPid)),
        join(snaps, "k", name("tree-record.json", deadPid)),
      ];
      const kept = [
        join(cacheRoot, "sealed-bin", "0123456789abcdef", name("node", process.pid)),
        join(snaps, "k", "tree", "workspace", name("repo-file", deadPid)),
      ];
      for (const f of [...dead, ...kept]) {
        await mkdir(join(f, ".."), { recursive: true });
        await writeFile(f, "x");
        await utimes(f, old, old);
      }
      await mkdir(runs, { recursive: true });
      const link = join(runs, name("latest", deadPid));
      await symlink("nowhere", link);
      await lutimes(link, old, old);
      // a directory written whole (atif's export) cut before its rename
      const tempDir = join(runs, name("atif", deadPid));
      await mkdir(tempDir);
      await writeFile(join(tempDir, "a-t0.json"), "{}");
      await utimes(tempDir, old, old);
      const o = { roots: [], tempRoots: [runs], cacheDirs: [snaps], cacheRoot, podman: false };
      const done = await sweepLeftovers(o);
      const removed = done.results.filter((r) => r.action.kind === "temp" && r.ok);
      expect(removed.map((r) => (r.action as { path: string }).path).sort()).toEqual(
        [...dead, link, tempDir].sort(),
      );
      expect([...dead, link, tempDir].map((f) => existsSync(f) || lexists(f))).toEqual([
        false,
        false,
        false,
        false,
        false,
        false,
      ]);
      expect(kept.map(existsSync)).toEqual([true, true]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe("atomic temps gc knows", () => {
  it("a session.json write cut before its rename leaves a temp whose name carries the pid gc reads", async () => {
    const { atomicTempPid } = await import("../../src/gc/stale-temps.js");
    const { saveSession } = await import("../../src/api/session.js");
    const dir = await mkdtemp(join(tmpdir(), "fg-session-temp-"));
    try {
      // session.json is a directory: the rename fails, as a kill between write and rename would leave it
      await mkdir(join(dir, "session.json"));
      await expect(saveSession({ dir } as never)).rejects.toThrow();
      const temps = (await readdir(dir)).filter((n) => n !== "session.json");
      expect(temps).toHaveLength(1);
      expect(atomicTempPid(temps[0]!)).toBe(process.pid);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
