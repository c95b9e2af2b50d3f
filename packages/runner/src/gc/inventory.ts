import { access, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { flakegymCacheRoot } from "../cache-root.mjs";
import { CGROUP_PARENT, OWNER_FILE, type Owner, parseOwnerTag, readOwnerRecord, tagBootId } from "./owner.js";
import type { Inventory, OwnedCgroup, OwnedContainer, OwnedDir } from "./plan.js";
import { cacheTempDirs, findCacheTemps, findOwnerlessDirs, findTempFiles } from "./stale-temps.js";
import { currentMountPoints } from "./unmount.js";

/** A directory whose children (and their children) may be flakegym-owned directories. */
export interface DirRoot {
  readonly path: string;
  /** Only top-level children whose name starts with this are looked at. */
  readonly prefix?: string;
}

/** Where flakegym makes its directories by default: `<tmpdir>/flakegym-*` (scratch, workers, podman). */
export function defaultDirRoots(): DirRoot[] {
  return [{ path: tmpdir(), prefix: "flakegym-" }];
}

/** The podman label naming a container's owner (see ownerTag). */
export const PODMAN_OWNER_LABEL = "flakegym.owner";

const CGROUP_ROOT = "/sys/fs/cgroup";

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}

async function subdirs(dir: string): Promise<string[]> {
  try {
    const entries = await readdir(dir, { withFileTypes: true });
    return entries.filter((e) => e.isDirectory() && !e.isSymbolicLink()).map((e) => join(dir, e.name));
  } catch {
    return [];
  }
}

async function ownedDir(path: string): Promise<OwnedDir | undefined> {
  const r = await readOwnerRecord(path);
  if (!r) return undefined;
  const { kind, createdAt: _, ...owner } = r;
  return { path, owner, kind };
}

/**
 * Directories holding an `owner.json`: children (then grandchildren) of each root, not descending
 * into an owned directory nor following symlinks; plus the parent of every mount point when it is
 * owned (a fork or worker made outside the roots).
 */
export async function findOwnedDirs(
  roots: readonly DirRoot[],
  mounts: readonly string[],
): Promise<OwnedDir[]> {
  const found = new Map<string, OwnedDir>();
  const visit = async (dir: string, depth: number) => {
    const d = await ownedDir(dir);
    if (d) {
      found.set(d.path, d);
      return;
    }
    if (depth > 1) return;
    for (const c of await subdirs(dir)) await visit(c, depth + 1);
  };
  for (const root of roots) {
    for (const c of await subdirs(root.path)) {
      if (root.prefix && !c.slice(root.path.length + 1).startsWith(root.prefix)) continue;
      await visit(c, 1);
    }
  }
  for (const m of mounts) {
    const parent = dirname(m);
    if (found.has(parent) || !(await exists(join(parent, OWNER_FILE)))) continue;
    const d = await ownedDir(parent);
    if (d) found.set(d.path, d);
  }
  return [...found.values()];
}

/** A tag's owner with the full boot id when the 8 hex it keeps match this boot (else stays dead). */
function ownerOfTag(name: string, currentBootId: string): Owner | undefined {
  const o = parseOwnerTag(name);
  if (!o) return undefined;
  return o.bootId === tagBootId(currentBootId) ? { ...o, bootId: currentBootId } : o;
}

/** The hierarchies worker cgroups live in: v1's pids/memory/cpuacct, or the v2 root. */
async function cgroupHierarchies(): Promise<string[]> {
  if (await exists(join(CGROUP_ROOT, "cgroup.controllers"))) return [CGROUP_ROOT];
  return ["pids", "memory", "cpuacct"].map((c) => join(CGROUP_ROOT, c));
}

/**
 * Worker cgroups named with an owner tag: children of every `flakegym` group found within four
 * levels of each hierarchy's root (processes of different sessions sit in different cgroups).
 */
export async function findOwnedCgroups(currentBootId: string): Promise<OwnedCgroup[]> {
  const out: OwnedCgroup[] = [];
  for (const h of await cgroupHierarchies()) {
    let level = [h];
    for (let depth = 0; depth < 4 && level.length > 0; depth++) {
      const next: string[] = [];
      for (const dir of level) {
        for (const c of await subdirs(dir)) {
          if (c.endsWith(`/${CGROUP_PARENT}`)) {
            for (const g of await subdirs(c)) {
              const owner = ownerOfTag(g.slice(c.length + 1), currentBootId);
              if (owner) out.push({ path: g, owner });
            }
          } else next.push(c);
        }
      }
      level = next.slice(0, 2000);
    }
  }
  return out;
}

/** podman containers labelled with an owner; none when podman is missing or fails. */
export async function findOwnedContainers(
  currentBootId: string,
  podman = "podman",
): Promise<OwnedContainer[]> {
  const r = await execa(podman, ["ps", "-a", "--filter", `label=${PODMAN_OWNER_LABEL}`, "--format", "json"], {
    reject: false,
    timeout: 60_000,
    stdin: "ignore",
  }).catch(() => undefined);
  if (r?.exitCode !== 0) return [];
  let rows: unknown;
  try {
    rows = JSON.parse(r.stdout || "[]");
  } catch {
    return [];
  }
  const out: OwnedContainer[] = [];
  for (const row of Array.isArray(rows) ? rows : []) {
    const names = (row as { Names?: unknown }).Names;
    const labels = (row as { Labels?: Record<string, string> | null }).Labels ?? {};
    const name = Array.isArray(names) ? String(names[0]) : undefined;
    const tag = labels[PODMAN_OWNER_LABEL];
    const owner = tag ? ownerOfTag(tag, currentBootId) : undefined;
    if (name && owner) out.push({ name, owner });
  }
  return out;
}

export interface InventoryOptions {
  readonly roots?: readonly DirRoot[];
  /** Where atomic-write temps are looked for (run and eval directories, exports); none by default. */
  readonly tempRoots?: readonly string[];
  /** Snapshot caches whose `tmp/` holds build scratch trees (default: the snapshot cache). */
  readonly cacheDirs?: readonly string[];
  /** flakegym's cache root, whose writer dirs (sealed-bin) hold atomic temps (default: the cache rule's). */
  readonly cacheRoot?: string;
  /** Look for podman containers (default true). */
  readonly podman?: boolean;
  readonly currentBootId: string;
}

/** Everything flakegym-owned on this machine, with each resource's owner. */
export async function takeInventory(o: InventoryOptions): Promise<Inventory> {
  const mounts = await currentMountPoints();
  const roots = o.roots ?? defaultDirRoots();
  // the snapshot cache's place (snapshots/key.ts: defaultSnapshotCacheDir), from the one cache rule
  const cacheRoot = o.cacheRoot ?? flakegymCacheRoot(process.env);
  const cacheDirs = o.cacheDirs ?? [join(cacheRoot, "snapshots")];
  const inCache = cacheTempDirs(cacheRoot, cacheDirs);
  const [dirs, cgroups, containers, temps, ownerless, cacheTemps, ...cacheFiles] = await Promise.all([
    findOwnedDirs(roots, mounts),
    findOwnedCgroups(o.currentBootId),
    o.podman === false ? Promise.resolve([]) : findOwnedContainers(o.currentBootId),
    findTempFiles([...(o.tempRoots ?? []), ...roots.map((r) => r.path)]),
    findOwnerlessDirs(roots),
    findCacheTemps(cacheDirs.map((d) => join(d, "tmp"))),
    ...inCache.map((d) => findTempFiles([d.path], d.depth)),
  ]);
  return {
    dirs,
    cgroups,
    containers,
    mounts,
    temps: [...temps, ...cacheFiles.flat()],
    ownerless,
    cacheTemps,
  };
}
