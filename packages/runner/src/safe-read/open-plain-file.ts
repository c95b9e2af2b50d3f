import { constants } from "node:fs";
import { type FileHandle, lstat, open, readlink, realpath } from "node:fs/promises";
import { join, sep } from "node:path";

/**
 * The one way the host opens a file in a tree an agent influenced (a target repository, a run or
 * eval directory): no symlink is followed anywhere on the way (each ancestor is lstat'ed and must be
 * a plain directory, the file is opened with O_NOFOLLOW), only a regular file is opened, and the
 * opened descriptor's real path (`/proc/self/fd/<fd>`) must lie under the root's real path, so an
 * ancestor swapped for a symlink between the checks and the open is caught. Nothing here reads
 * or interprets content; callers cap their reads by the handle's size.
 */

/** True when `real` is `root` or lies under it (both real paths). Pure. */
export function isUnder(root: string, real: string): boolean {
  return real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);
}

/**
 * Opens `root/<parts…>` read-only when every ancestor is a plain directory (no symlink) and the
 * file is a regular file whose descriptor resolves under the root; undefined otherwise (absent, a
 * symlink on the way, a special file, or moved out from under the root). The caller closes the
 * handle. `parts` must already be checked names (no empty, `.` or `..` part).
 */
export async function openPlainFileUnder(
  root: string,
  parts: readonly string[],
): Promise<FileHandle | undefined> {
  if (parts.length === 0) return undefined;
  const realRoot = await realpath(root).catch(() => undefined);
  if (realRoot === undefined) return undefined;
  let dir = realRoot;
  for (const part of parts.slice(0, -1)) {
    dir = join(dir, part);
    const st = await lstat(dir).catch(() => undefined);
    if (!st?.isDirectory()) return undefined;
  }
  const fh = await open(
    join(realRoot, ...parts),
    constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
  ).catch(() => undefined);
  if (!fh) return undefined;
  try {
    const st = await fh.stat();
    const real = await readlink(`/proc/self/fd/${fh.fd}`).catch(() => undefined);
    if (st.isFile() && (real === undefined || isUnder(realRoot, real))) return fh;
  } catch {
    // fall through: closed below
  }
  await fh.close();
  return undefined;
}
