import { readdir, readFile, rm, rmdir, unlink, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { execa } from "execa";
import { match } from "ts-pattern";
import { flakegymCacheRoot } from "../cache-root.mjs";
import {
  findHarborTrees,
  planHarborTrees,
  removeHarborScratch,
  removeHarborTree,
  scratchLivePids,
} from "./harbor-trees.js";
import { type DirRoot, takeInventory } from "./inventory.js";
import { bootId, ownerAlive } from "./owner.js";
import { type Inventory, ownerKey, planSweep, type SweepAction, type SweepPlan } from "./plan.js";
import { livePidsOf } from "./stale-temps.js";
import { currentMountPoints, unmountRetry } from "./unmount.js";

/** One executed (or, dry, planned) action and how it went. */
export interface SweepResult {
  readonly action: SweepAction;
  readonly ok: boolean;
  readonly detail?: string;
}

export interface SweepReport {
  readonly dryRun: boolean;
  readonly plan: SweepPlan;
  readonly results: readonly SweepResult[];
}

export interface SweepOptions {
  /** Where owned directories are looked for (default: `<tmpdir>/flakegym-*`). */
  readonly roots?: readonly DirRoot[];
  /** Report what would be removed without removing anything. */
  readonly dryRun?: boolean;
  /** Look for podman containers (default true). */
  readonly podman?: boolean;
  /** Where atomic-write temps of dead writers are looked for (default: `runs/` and `evals/` under the cwd). */
  readonly tempRoots?: readonly string[];
  /** Snapshot caches whose `tmp/` holds build scratch trees (default: the snapshot cache). */
  readonly cacheDirs?: readonly string[];
  /** flakegym's cache root (its sealed-bin temps; default: the cache rule's). */
  readonly cacheRoot?: string;
  /** How old an owner-less leftover must be to go (default STALE_AFTER_MS). */
  readonly staleAfterMs?: number;
  /** Also remove built Harbor trees nobody uses, last used at least this long ago (default: kept). */
  readonly harborUnusedMs?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function readPids(cgroup: string): Promise<number[]> {
  const text = await readFile(join(cgroup, "cgroup.procs"), "utf8").catch(() => "");
  return text.split("\n").filter(Boolean).map(Number);
}

/** SIGKILLs every process in a cgroup until it is empty (bounded: 5 s). */
async function killCgroup(cgroup: string): Promise<SweepResult["detail"]> {
  await writeFile(join(cgroup, "cgroup.kill"), "1").catch(() => {});
  const killed = new Set<number>();
  const end = Date.now() + 5000;
  for (;;) {
    const pids = await readPids(cgroup);
    if (pids.length === 0) return `${killed.size} process(es) killed`;
    if (Date.now() > end) throw new Error(`processes ${pids.join(", ")} still in ${cgroup} after 5 s`);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
        killed.add(pid);
      } catch {
        // gone
      }
    }
    await sleep(20);
  }
}

async function removeCgroup(path: string): Promise<string | undefined> {
  for (let i = 0; i < 50; i++) {
    try {
      await rmdir(path);
      return undefined;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return "already gone";
      if (i === 49) throw err;
      await sleep(20);
    }
  }
  return undefined;
}

/** Removes a directory tree, never crossing into a mount (one still mounted inside is refused). */
async function removeDir(path: string): Promise<string | undefined> {
  const inside = (await currentMountPoints()).filter((m) => m === path || m.startsWith(`${path}/`));
  if (inside.length > 0) throw new Error(`still mounted inside: ${inside.join(", ")}`);
  const r = await execa("rm", ["-rf", "--one-file-system", "--", path], {
    reject: false,
    timeout: 300_000,
    stdin: "ignore",
  });
  if (r.exitCode !== 0) throw new Error(`rm failed: ${r.stderr.trim()}`);
  return undefined;
}

/** Removes a directory only while it holds nothing but a cut owner.json temp (never a file of a live maker). */
async function removeEmptyDir(path: string): Promise<string | undefined> {
  for (const n of await readdir(path).catch(() => [] as string[])) {
    if (!n.startsWith(".owner.json.")) throw new Error(`no longer empty (${n})`);
    await unlink(join(path, n)).catch(() => {});
  }
  await rmdir(path);
  return undefined;
}

async function execute(a: SweepAction, cacheRoot: string): Promise<SweepResult> {
  try {
    const detail = await match(a)
      .with({ kind: "kill" }, (x) => killCgroup(x.cgroup))
      .with({ kind: "container" }, async (x) => {
        const r = await execa("podman", ["rm", "-f", "-t", "0", x.name], {
          reject: false,
          timeout: 120_000,
          stdin: "ignore",
        });
        if (r.exitCode !== 0 && !/no such container/i.test(r.stderr)) throw new Error(r.stderr.trim());
        return undefined;
      })
      .with({ kind: "unmount" }, async (x) => {
        const r = await unmountRetry(x.path);
        if (r.result === "failed") throw new Error(r.detail);
        return r.result === "unmounted" ? undefined : `${r.result}${r.detail ? `: ${r.detail}` : ""}`;
      })
      .with({ kind: "cgroup" }, (x) => removeCgroup(x.path))
      .with({ kind: "dir" }, { kind: "cache-temp" }, (x) => removeDir(x.path))
      .with({ kind: "temp" }, async (x) => {
        // a temp directory (a directory written whole) holds only that writer's files
        await rm(x.path, { recursive: true });
        return undefined;
      })
      .with({ kind: "empty-dir" }, (x) => removeEmptyDir(x.path))
      .with({ kind: "harbor-scratch" }, (x) => removeHarborScratch(x.path))
      .with({ kind: "harbor-tree" }, (x) => removeHarborTree(cacheRoot, x.name))
      .exhaustive();
    return { action: a, ok: true, ...(detail ? { detail } : {}) };
  } catch (err) {
    return { action: a, ok: false, detail: (err as Error).message };
  }
}

/** The sweep's actions on the built Harbor trees, and how many are in use. */
async function harborActions(
  cacheRoot: string,
  unusedMs: number | undefined,
  staleAfterMs: number | undefined,
): Promise<{ actions: SweepAction[]; inUse: number }> {
  const trees = await findHarborTrees(cacheRoot);
  const p = planHarborTrees(trees, {
    livePids: scratchLivePids(trees),
    nowMs: Date.now(),
    ...(unusedMs !== undefined ? { unusedMs } : {}),
    ...(staleAfterMs !== undefined ? { staleAfterMs } : {}),
  });
  const actions = p.remove.map(
    (r): SweepAction =>
      r.scratch
        ? { kind: "harbor-scratch", path: r.path }
        : { kind: "harbor-tree", name: r.name, why: r.why },
  );
  return { actions, inUse: p.kept.filter((k) => k.inUse).length };
}

/** The keys of the inventory's owners that still run. */
async function liveOwners(inv: Inventory, currentBootId: string): Promise<Set<string>> {
  const owners = [...inv.dirs, ...inv.cgroups, ...inv.containers].map((r) => r.owner);
  const alive = new Set<string>();
  for (const o of owners) {
    const k = ownerKey(o);
    if (!alive.has(k) && (await ownerAlive(o, currentBootId))) alive.add(k);
  }
  return alive;
}

/**
 * Finds what dead flakegym processes left (owner gone: pid exited or reused, or another boot) and
 * removes it in order — processes, containers, mounts, cgroups, directories. A live owner's
 * resources are never touched. Failures are recorded per action; the sweep goes on.
 */
export async function sweepLeftovers(o: SweepOptions = {}): Promise<SweepReport> {
  const currentBootId = bootId();
  const inv = await takeInventory({
    currentBootId,
    ...(o.roots ? { roots: o.roots } : {}),
    ...(o.podman === undefined ? {} : { podman: o.podman }),
    ...(o.cacheDirs ? { cacheDirs: o.cacheDirs } : {}),
    ...(o.cacheRoot ? { cacheRoot: o.cacheRoot } : {}),
    tempRoots: o.tempRoots ?? [resolve("runs"), resolve("evals")],
  });
  const judge = {
    livePids: livePidsOf([...(inv.temps ?? []), ...(inv.cacheTemps ?? [])].map((t) => t.pid)),
    nowMs: Date.now(),
    ...(o.staleAfterMs !== undefined ? { afterMs: o.staleAfterMs } : {}),
  };
  const swept = planSweep(inv, await liveOwners(inv, currentBootId), judge);
  const cacheRoot = o.cacheRoot ?? flakegymCacheRoot(process.env);
  const harbor = await harborActions(cacheRoot, o.harborUnusedMs, o.staleAfterMs);
  const plan = { actions: [...swept.actions, ...harbor.actions], live: swept.live + harbor.inUse };
  if (o.dryRun) return { dryRun: true, plan, results: plan.actions.map((action) => ({ action, ok: true })) };
  const results: SweepResult[] = [];
  for (const a of plan.actions) results.push(await execute(a, cacheRoot));
  return { dryRun: false, plan, results };
}

/** One line per action, for people. Pure. */
export function formatSweepResult(r: SweepResult, dryRun: boolean): string {
  const what = match(r.action)
    .with({ kind: "kill" }, (x) => `kill processes of cgroup ${x.cgroup}`)
    .with({ kind: "container" }, (x) => `remove podman container ${x.name}`)
    .with({ kind: "unmount" }, (x) => `unmount ${x.path}`)
    .with({ kind: "cgroup" }, (x) => `remove cgroup ${x.path}`)
    .with({ kind: "dir" }, (x) => `remove directory ${x.path}`)
    .with({ kind: "temp" }, (x) => `remove a dead writer's temp file ${x.path}`)
    .with({ kind: "cache-temp" }, (x) => `remove a dead snapshot build's scratch tree ${x.path}`)
    .with({ kind: "empty-dir" }, (x) => `remove empty owner-less directory ${x.path}`)
    .with(
      { kind: "harbor-scratch" },
      (x) => `remove a dead Harbor environment build's scratch copy ${x.path}`,
    )
    .with({ kind: "harbor-tree" }, (x) => `remove the built Harbor tree ${x.name} (${x.why})`)
    .exhaustive();
  const status = dryRun ? "would" : r.ok ? "done" : "FAILED";
  return `${status}: ${what}${r.detail ? ` (${r.detail})` : ""}`;
}
