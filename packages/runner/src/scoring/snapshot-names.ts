import { constants, type Dirent } from "node:fs";
import { open, readdir } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { addFileNames, fileReadingOf } from "./code-reading.js";
import { addPathNames } from "./new-names.js";

/**
 * The names the task's snapshot already has: every name and number in its code files (lexed as the
 * judge's code reading lexes them, comments and strings left out) and every part of its paths. The
 * code reading shows these as written and any other name a change introduces as a placeholder
 * (scoring/new-names.ts). The snapshot is the task's clean tree, never the agent's: nothing the agent
 * wrote can add a name here. Symlinks are not followed, `.git` is skipped, and the walk is bounded
 * (entries, files, bytes, time): a name the walk did not reach is only shown as a placeholder.
 */

export interface SnapshotNames {
  readonly names: ReadonlySet<string>;
  /** Code files lexed, their characters, and whether a bound stopped the walk before the end. */
  readonly files: number;
  readonly chars: number;
  readonly truncated: boolean;
}

export interface SnapshotNamesLimits {
  /** Directory entries looked at (any kind), code files lexed, bytes read per file and in all. */
  readonly maxEntries: number;
  readonly maxFiles: number;
  readonly maxFileBytes: number;
  readonly maxTotalBytes: number;
}

export const SNAPSHOT_NAMES_LIMITS: SnapshotNamesLimits = {
  maxEntries: 200_000,
  maxFiles: 20_000,
  maxFileBytes: 1 << 20,
  maxTotalBytes: 64 << 20,
};

/** The first `max` bytes of the regular file at `path` (not followed if a symlink replaced it). */
async function head(path: string, max: number): Promise<string | undefined> {
  const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (!fh) return undefined;
  try {
    const st = await fh.stat();
    if (!st.isFile()) return undefined;
    const buf = Buffer.alloc(Math.min(st.size, max));
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead).toString("utf8");
  } finally {
    await fh.close();
  }
}

/** Walks the snapshot at `root` and collects its names (see above); stopped by `signal`, it returns what it read (truncated). Never throws. */
export async function snapshotNames(
  root: string,
  signal: AbortSignal,
  limits: SnapshotNamesLimits = SNAPSHOT_NAMES_LIMITS,
): Promise<SnapshotNames> {
  const names = new Set<string>();
  let files = 0;
  let bytes = 0;
  let truncated = false;
  let seen = 0;
  // breadth first: the repository's own top-level sources before anything nested deep
  const dirs = [""];
  for (let d = 0; d < dirs.length; d++) {
    if (signal.aborted || seen >= limits.maxEntries) return { names, files, chars: bytes, truncated: true };
    const rel = dirs[d]!;
    const entries: Dirent[] = await readdir(join(root, rel), { withFileTypes: true }).catch(() => []);
    seen += entries.length;
    for (const e of entries) {
      const path = rel === "" ? e.name : `${rel}/${e.name}`;
      if (e.isSymbolicLink() || e.name === ".git") continue;
      addPathNames(names, path);
      if (e.isDirectory()) dirs.push(path);
      if (!e.isFile() || fileReadingOf(path).kind === "not-code") continue;
      if (files >= limits.maxFiles || bytes >= limits.maxTotalBytes) {
        truncated = true;
        continue;
      }
      const text = await head(join(root, path), limits.maxFileBytes);
      if (text === undefined) continue;
      files++;
      bytes += text.length;
      addFileNames(names, path, text);
    }
  }
  return { names, files, chars: bytes, truncated };
}

const cache = new Map<string, Promise<SnapshotNames>>();

/** How long one snapshot's walk may take; what it read by then is used. */
export const SNAPSHOT_NAMES_MS = 60_000;

/**
 * snapshotNames of `root`, walked once per snapshot and process (a snapshot is content-addressed and
 * never changes; a rollout scores many trajectories of one), under its own deadline so one
 * trajectory's abort does not cut another's names short. The last few snapshots are kept.
 */
export function snapshotNamesCached(root: string): Promise<SnapshotNames> {
  const hit = cache.get(root);
  if (hit) return hit;
  const p = (async () => {
    using deadline = createDeadline({
      timeout: { limit: "reading the snapshot's names for the judge", ms: SNAPSHOT_NAMES_MS },
    });
    return await snapshotNames(root, deadline.signal);
  })();
  cache.set(root, p);
  while (cache.size > 4) cache.delete(cache.keys().next().value!);
  return p;
}
