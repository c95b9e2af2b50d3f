import { existsSync } from "node:fs";
import { readdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { execa } from "execa";
import { LOCKS_DIR, liveUsersOf, TREE_DONE_MARK, treeLockOf, USE_DIR } from "./harbor-tree-use.js";
import { acquireLock } from "./lock.js";
import { livePidsOf, STALE_AFTER_MS } from "./stale-temps.js";

/**
 * The built Harbor trees in the flakegym cache (`<cache>/harbor-rootfs/`: Debian bases
 * `base-<key>`, Dockerfile trees `<key>`, a build's scratch copy `<name>.tmp-<pid>-<ms>` and a
 * removal's `.gc-<name>-<pid>`), what `flakegym gc` removes of them, and the removal itself.
 * A dead build's scratch copy always goes; a finished tree only when asked (`--harbor-unused-days`),
 * when no live process uses it (harbor-tree-use.ts) and its last use is older than asked.
 */

/** One entry of the trees dir, as found. */
export type HarborTree =
  | {
      readonly kind: "tree";
      readonly name: string;
      readonly path: string;
      /** The newest user record's time, else the tree's finish mark's. */
      readonly lastUsedMs: number;
      /** pids of the live processes using it. */
      readonly liveUsers: readonly number[];
    }
  | {
      readonly kind: "scratch";
      readonly name: string;
      readonly path: string;
      readonly pid: number;
      readonly mtimeMs: number;
    };

/** The pid in a build's scratch name (`<name>.tmp-<pid>-<ms>`) or a removal's (`.gc-<name>-<pid>`). Pure. */
export function scratchPidOf(name: string): number | undefined {
  const m = /\.tmp-(\d{1,10})-\d+$/.exec(name) ?? /^\.gc-.+-(\d{1,10})$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** What to remove of the trees found, and what is kept (with why). Pure. */
export interface HarborTreePlan {
  readonly remove: readonly {
    readonly path: string;
    readonly name: string;
    readonly scratch: boolean;
    readonly why: string;
  }[];
  /** `inUse`: a live process holds it (counted with the live runs' resources). */
  readonly kept: readonly { readonly name: string; readonly inUse: boolean; readonly why: string }[];
}

/**
 * The trees to remove: scratch copies of builds whose pid is gone; with `unusedMs`, finished trees
 * nobody uses whose last use is at least that old. Without `unusedMs` finished trees are kept (a
 * cache, not a leftover). Pure.
 */
export function planHarborTrees(
  trees: readonly HarborTree[],
  judge: {
    readonly livePids: ReadonlySet<number>;
    readonly nowMs: number;
    readonly unusedMs?: number;
    /** How old a dead build's scratch copy must be (default STALE_AFTER_MS: a pid of another namespace may look dead). */
    readonly staleAfterMs?: number;
  },
): HarborTreePlan {
  const remove: HarborTreePlan["remove"][number][] = [];
  const kept: HarborTreePlan["kept"][number][] = [];
  for (const t of trees) {
    const { name, path } = t;
    if (t.kind === "scratch") {
      if (judge.livePids.has(t.pid))
        kept.push({ name, inUse: true, why: `its build (pid ${t.pid}) still runs` });
      else if (judge.nowMs - t.mtimeMs < (judge.staleAfterMs ?? STALE_AFTER_MS))
        kept.push({ name, inUse: false, why: "a scratch copy younger than the stale bound" });
      else remove.push({ path, name, scratch: true, why: `a dead build's scratch copy (pid ${t.pid} gone)` });
      continue;
    }
    const days = ((judge.nowMs - t.lastUsedMs) / 86_400_000).toFixed(1);
    if (t.liveUsers.length > 0)
      kept.push({ name, inUse: true, why: `in use by pid ${t.liveUsers.join(", ")}` });
    else if (judge.unusedMs === undefined)
      kept.push({ name, inUse: false, why: "a cache (no --harbor-unused-days)" });
    else if (judge.nowMs - t.lastUsedMs < judge.unusedMs)
      kept.push({ name, inUse: false, why: `last used ${days} d ago` });
    else remove.push({ path, name, scratch: false, why: `unused for ${days} d` });
  }
  return { remove, kept };
}

async function lastUseOf(trees: string, name: string): Promise<number> {
  const dir = join(trees, USE_DIR, name);
  const times = [(await stat(join(trees, name, TREE_DONE_MARK)).catch(() => undefined))?.mtimeMs ?? 0];
  for (const f of await readdir(dir).catch(() => [] as string[]))
    times.push((await stat(join(dir, f)).catch(() => undefined))?.mtimeMs ?? 0);
  return Math.max(...times);
}

/** The entries of `<cacheRoot>/harbor-rootfs/` (none when it is missing). Unfinished trees are scratch or skipped. */
export async function findHarborTrees(cacheRoot: string): Promise<HarborTree[]> {
  const trees = join(cacheRoot, "harbor-rootfs");
  const out: HarborTree[] = [];
  const entries = await readdir(trees, { withFileTypes: true }).catch(() => []);
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!e.isDirectory() || e.name === USE_DIR || e.name === LOCKS_DIR) continue;
    const path = join(trees, e.name);
    const pid = scratchPidOf(e.name);
    if (pid !== undefined) {
      const mtimeMs = (await stat(path).catch(() => undefined))?.mtimeMs ?? Date.now();
      out.push({ kind: "scratch", name: e.name, path, pid, mtimeMs });
    } else if (!e.name.startsWith(".") && existsSync(join(path, TREE_DONE_MARK))) {
      const liveUsers = (await liveUsersOf(trees, e.name)).map((o) => o.pid);
      out.push({ kind: "tree", name: e.name, path, lastUsedMs: await lastUseOf(trees, e.name), liveUsers });
    }
  }
  return out;
}

/** The live pids among the scratch trees' (for {@link planHarborTrees}). */
export const scratchLivePids = (trees: readonly HarborTree[]) =>
  livePidsOf(trees.flatMap((t) => (t.kind === "scratch" ? [t.pid] : [])));

async function rmTree(path: string): Promise<void> {
  const r = await execa("rm", ["-rf", "--one-file-system", "--", path], {
    reject: false,
    timeout: 600_000,
    stdin: "ignore",
  });
  if (r.exitCode !== 0) throw new Error(`rm of ${path} failed: ${r.stderr.trim()}`);
}

/**
 * Removes finished tree `name` unless a live process holds it: under its lock (waiting at most
 * `lockMs`), checked again, renamed to `.gc-<name>-<pid>`, then removed outside the lock; its
 * podman image (`localhost/flakegym-harbor-rootfs:<name>`) too when podman has it. Returns what
 * was done; throws naming the tree when it is busy.
 */
export async function removeHarborTree(cacheRoot: string, name: string, lockMs = 5_000): Promise<string> {
  const trees = join(cacheRoot, "harbor-rootfs");
  const release = await acquireLock(treeLockOf(trees, name), { timeoutMs: lockMs }).catch(() => {
    throw new Error(
      `tree ${name} is being taken into use (its lock is held): left alone, run gc again later`,
    );
  });
  const grave = join(trees, `.gc-${name}-${process.pid}`);
  try {
    const users = await liveUsersOf(trees, name);
    if (users.length > 0)
      throw new Error(`tree ${name} is in use by pid ${users.map((u) => u.pid).join(", ")}: left alone`);
    await rename(join(trees, name), grave);
    await rm(join(trees, USE_DIR, name), { recursive: true, force: true });
  } finally {
    await release();
  }
  await rmTree(grave);
  const img = await execa("podman", ["rmi", `localhost/flakegym-harbor-rootfs:${name}`], {
    reject: false,
    timeout: 120_000,
    stdin: "ignore",
  }).catch(() => undefined);
  return img?.exitCode === 0 ? "and its podman image" : "";
}

/** Removes a dead build's scratch copy (or a killed removal's leftover). */
export async function removeHarborScratch(path: string): Promise<string> {
  await rmTree(path);
  return "";
}
