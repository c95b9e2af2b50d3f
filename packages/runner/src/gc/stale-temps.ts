import { lstat, readdir, stat } from "node:fs/promises";
import { join } from "node:path";

/**
 * Temporaries flakegym leaves when killed mid-write, which carry no owner.json of their own:
 * - an atomic write's temp file beside its target, `.<name>.<pid>.<rand>.tmp` (run-format/jsonl.ts;
 *   `export`, `rollout` and `eval` all write through it), removed once its pid is gone;
 * - a directory made just before its owner.json (a worker dir, a scratch dir) and left empty,
 *   removed once it is older than a bound (no owner can be judged, so age is the only sign).
 * - a snapshot build's scratch tree in the cache, `<cache>/tmp/<key16>-<pid>-<hex8>` (and the
 *   toolchain probe's `identity-<pid>-<hex8>`), removed once its pid is gone: a SIGKILLed build
 *   never reaches its own cleanup, and such a tree holds a whole repository and its deps.
 * - the same atomic-write temps in the cache's writer dirs (`cacheTempDirs`): the sealed binaries'
 *   copies (a node binary's worth each), a snapshot's pins, its tree record and a failed build's log.
 * All are found here; what to remove is decided by the pure functions.
 */

/** A found temp file: its path, the pid in its name and when it was last written. */
export interface TempFile {
  readonly path: string;
  readonly pid: number;
  readonly mtimeMs: number;
}

/** A directory under a flakegym root with no owner.json. */
export interface OwnerlessDir {
  readonly path: string;
  readonly mtimeMs: number;
  readonly empty: boolean;
}

/** How old a temp or an ownerless dir must be before it is judged (a writer may be just starting). */
export const STALE_AFTER_MS = 10 * 60_000;

/** The pid an atomic write's temp name carries, if it is one (`.<name>.<pid>.<rand>.tmp`). Pure. */
export function atomicTempPid(name: string): number | undefined {
  const m = /^\..+\.(\d{1,10})\.[a-z0-9]{1,16}\.tmp$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** The pid a snapshot cache scratch dir's name carries (`<name>-<pid>-<hex8>`), if it is one. Pure. */
export function cacheTempPid(name: string): number | undefined {
  const m = /^[A-Za-z0-9_.]+-(\d{1,10})-[0-9a-f]{8}$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** A dir whose atomic-write temps gc looks for, and how many levels down. */
export interface TempDir {
  readonly path: string;
  readonly depth: number;
}

/**
 * The cache's dirs where flakegym writes whole files through a temp (never a snapshot's tree, whose
 * files are a repository's own). Pure.
 */
export function cacheTempDirs(cacheRoot: string, snapshotCaches: readonly string[]): TempDir[] {
  return [
    { path: join(cacheRoot, "sealed-bin"), depth: 1 },
    ...snapshotCaches.flatMap((c) => [
      // the cache's own files, pins/ and each snapshot's dir (its tree-record.json), not its tree
      { path: c, depth: 1 },
      { path: join(c, "failed"), depth: 1 },
    ]),
  ];
}

/** Scratch dirs of snapshot builds directly under each cache `tmp/` dir (no symlinks followed). */
export async function findCacheTemps(cacheTmpDirs: readonly string[]): Promise<TempFile[]> {
  const out: TempFile[] = [];
  for (const dir of [...new Set(cacheTmpDirs)]) {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const pid = e.isDirectory() ? cacheTempPid(e.name) : undefined;
      if (pid === undefined) continue;
      const st = await stat(join(dir, e.name)).catch(() => undefined);
      if (st) out.push({ path: join(dir, e.name), pid, mtimeMs: st.mtimeMs });
    }
  }
  return out;
}

/** A temp is stale when its writer's pid is gone and it has not been written for a while. Pure. */
export function isStaleTemp(
  t: TempFile,
  livePids: ReadonlySet<number>,
  nowMs: number,
  afterMs = STALE_AFTER_MS,
) {
  return !livePids.has(t.pid) && nowMs - t.mtimeMs >= afterMs;
}

/** An ownerless dir is removed when empty and older than the bound. Pure. */
export function isStaleOwnerless(d: OwnerlessDir, nowMs: number, afterMs = STALE_AFTER_MS): boolean {
  return d.empty && nowMs - d.mtimeMs >= afterMs;
}

/**
 * Atomic-write temps under each root, `depth` levels down at most (no symlinks followed), each once
 * (a root inside another — `gc --dir` under the default roots — would find it twice, and the second
 * removal report a false failure).
 */
export async function findTempFiles(roots: readonly string[], depth = 4): Promise<TempFile[]> {
  const found = new Map<string, TempFile>();
  const walk = async (dir: string, left: number): Promise<void> => {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const p = join(dir, e.name);
      // a directory too: one written whole (run-format/dir-atomic.ts, atif's export) goes through one
      const pid = atomicTempPid(e.name);
      if (e.isDirectory() && pid === undefined) {
        if (left > 0) await walk(p, left - 1);
        continue;
      }
      // a symlink too: `latest` of evals/ is replaced through one
      if (!e.isFile() && !e.isSymbolicLink() && !e.isDirectory()) continue;
      if (pid === undefined) continue;
      const st = await lstat(p).catch(() => undefined);
      if (st) found.set(p, { path: p, pid, mtimeMs: st.mtimeMs });
    }
  };
  for (const r of [...new Set(roots)]) await walk(r, depth);
  return [...found.values()];
}

/** The pids among `pids` that run now (in this pid namespace). */
export function livePidsOf(pids: Iterable<number>): Set<number> {
  const live = new Set<number>();
  for (const pid of pids) {
    try {
      process.kill(pid, 0);
      live.add(pid);
    } catch (err) {
      // EPERM: it runs, as another user
      if ((err as NodeJS.ErrnoException).code === "EPERM") live.add(pid);
    }
  }
  return live;
}

/** Entries that do not make a directory non-empty: an owner.json cut before its rename. */
const isOwnerTemp = (name: string) => name.startsWith(".owner.json.");

async function ownerlessDir(path: string): Promise<OwnerlessDir | "owned" | undefined> {
  const names = await readdir(path).catch(() => undefined);
  if (!names) return undefined;
  if (names.includes("owner.json")) return "owned";
  const st = await stat(path).catch(() => undefined);
  if (!st) return undefined;
  return { path, mtimeMs: st.mtimeMs, empty: names.every(isOwnerTemp) };
}

/**
 * Directories without owner.json where flakegym makes owned ones: children of each root with its
 * prefix (a scratch dir, `flakegym-workers`) and their children (a worker dir).
 */
export async function findOwnerlessDirs(
  roots: readonly { readonly path: string; readonly prefix?: string }[],
): Promise<OwnerlessDir[]> {
  const out: OwnerlessDir[] = [];
  const dirsOf = async (d: string) =>
    (await readdir(d, { withFileTypes: true }).catch(() => []))
      .filter((e) => e.isDirectory() && !e.isSymbolicLink())
      .map((e) => e.name);
  for (const root of roots) {
    for (const name of await dirsOf(root.path)) {
      if (root.prefix && !name.startsWith(root.prefix)) continue;
      const top = await ownerlessDir(join(root.path, name));
      if (top === "owned" || top === undefined) continue;
      out.push(top);
      for (const child of await dirsOf(top.path)) {
        const d = await ownerlessDir(join(top.path, child));
        if (d !== "owned" && d !== undefined) out.push(d);
      }
    }
  }
  return out;
}
