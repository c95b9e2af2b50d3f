import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, unlink, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import { acquireLock } from "./lock.js";
import { Owner, ownerAlive, selfOwner } from "./owner.js";

/**
 * Who uses a built Harbor tree (`<cache>/harbor-rootfs/<key>` or `base-<key>`), so `flakegym gc`
 * never removes one under a run. A process that builds on a tree, runs the oracle on it, binds it
 * as a sandbox's system or `podman import`s it first registers itself — under the tree's lock —
 * as a user: `.use/<name>/<pid>.<starttime>.json` (its owner record; the newest file's time is the
 * tree's last use). gc takes the same lock, sees no live user, and renames the tree away before
 * removing it, so a tree is either held or gone, never half-removed under a user.
 */

/** The directory of built trees inside the flakegym cache. */
export const TREES_DIR = "harbor-rootfs";
/** Users' records, by tree name. */
export const USE_DIR = ".use";
/** The per-tree locks (lock.ts directories). */
export const LOCKS_DIR = ".locks";
/** The marker a finished tree holds (debian-base.ts writes it last; a tree without it is unfinished). */
export const TREE_DONE_MARK = ".flakegym-rootfs.json";

/** The lock directory of tree `name` under the trees dir. Pure. */
export const treeLockOf = (trees: string, name: string) => join(trees, LOCKS_DIR, name);

/** A user's record file name: `<pid>.<starttime>.json`. Pure. */
export const useFileOf = (o: Owner) => `${o.pid}.${o.startTime}.json`;

/** Whether `dir` is a tree of the harbor-rootfs cache (its parent is named so, its name not hidden). Pure. */
export function isHarborTree(dir: string): boolean {
  const name = basename(dir);
  return (
    basename(dirname(dir)) === TREES_DIR && name !== "" && !name.startsWith(".") && !name.includes(".tmp-")
  );
}

/** The live owners among a tree's user records (dead ones' files are removed). */
export async function liveUsersOf(trees: string, name: string): Promise<Owner[]> {
  const dir = join(trees, USE_DIR, name);
  const live: Owner[] = [];
  for (const f of await readdir(dir).catch(() => [] as string[])) {
    const parsed = Owner.safeParse(
      await readFile(join(dir, f), "utf8")
        .then((t) => JSON.parse(t) as unknown)
        .catch(() => undefined),
    );
    if (parsed.success && (await ownerAlive(parsed.data))) live.push(parsed.data);
    else await unlink(join(dir, f)).catch(() => {});
  }
  return live;
}

const held = new Set<string>();

/**
 * Registers this process as a user of the finished tree `dir` (once per process); false when the
 * tree is not there or unfinished (never built, or removed by `flakegym gc`). A directory outside
 * the harbor-rootfs cache is not tracked: true when it exists.
 */
export async function holdHarborTree(dir: string, signal?: AbortSignal): Promise<boolean> {
  if (!isHarborTree(dir)) return existsSync(dir);
  if (held.has(dir)) return existsSync(join(dir, TREE_DONE_MARK));
  const trees = dirname(dir);
  const name = basename(dir);
  const release = await acquireLock(treeLockOf(trees, name), {
    timeoutMs: 120_000,
    ...(signal ? { signal } : {}),
  });
  try {
    if (!existsSync(join(dir, TREE_DONE_MARK))) return false;
    const me = selfOwner();
    await mkdir(join(trees, USE_DIR, name), { recursive: true });
    await liveUsersOf(trees, name);
    await writeFile(join(trees, USE_DIR, name, useFileOf(me)), `${JSON.stringify(me)}\n`);
    held.add(dir);
    return true;
  } finally {
    await release();
  }
}
