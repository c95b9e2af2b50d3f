import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { lstat, readdir, readFile, readlink } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { writeFileAtomic } from "../run-format/jsonl.js";

/**
 * A snapshot tree's content record, kept beside the tree in the cache (`<key>/tree-record.json`),
 * written once when the snapshot is built (or first used, for a cache entry older than it): every
 * entry's kind, permission bits and content hash (a symlink: its target), and the `lstat` size and
 * mtime it had then. Its `digest` is over the content only, so it is stable while the tree's files
 * are: run.json keeps it per task and `--resume` refuses a task whose tree differs.
 *
 * Checking is cheap: a file whose size and mtime still match is taken from the record; only the
 * others are hashed again. Times move without an edit: every trajectory's diff is taken in a
 * repository of ours whose alternates are the snapshot's `.git/objects`, and git "freshens" (sets
 * the mtime of) each base object it would have written again — so a tree's objects' times change
 * with every run while their content does not. Such files are re-hashed, found equal, and their
 * new times written back into the record (the next check skips them again).
 */

/** One entry: kind, permission bits, content sha256 (or a symlink's target), size, mtime in ns. */
const Entry = z.tuple([z.enum(["f", "l", "d"]), z.number().int(), z.string(), z.number(), z.string()]);
type Entry = z.infer<typeof Entry>;

export const TreeRecord = z
  .object({
    version: z.literal(1),
    digest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
    entries: z.record(z.string(), Entry),
  })
  .strict();
export type TreeRecord = z.infer<typeof TreeRecord>;

export const TREE_RECORD_FILE = "tree-record.json";

/** Whether a path (relative to the tree, `/`-separated) is git bookkeeping left out (reading may rewrite it). Pure. */
export function isRecordExempt(rel: string): boolean {
  return /(^|\/)\.git\/(index$|logs(\/|$))/.test(rel);
}

/** The digest over entries (path order): content, not times. Pure. */
export function digestOf(entries: Readonly<Record<string, Entry>>): string {
  const h = createHash("sha256");
  for (const rel of Object.keys(entries).sort()) {
    const [kind, mode, what] = entries[rel]!;
    h.update(`${kind} ${(mode & 0o7777).toString(8)} ${JSON.stringify(rel)} ${what}\n`);
  }
  return `sha256:${h.digest("hex")}`;
}

/** The paths whose entry differs between two records' entries (added, removed, changed), sorted. Pure. */
export function changedPaths(
  before: Readonly<Record<string, Entry>>,
  after: Readonly<Record<string, Entry>>,
): string[] {
  const out = new Set<string>();
  for (const [rel, e] of Object.entries(before)) {
    const a = after[rel];
    if (!a || a[0] !== e[0] || a[1] !== e[1] || a[2] !== e[2]) out.add(rel);
  }
  for (const rel of Object.keys(after)) if (!(rel in before)) out.add(rel);
  return [...out].sort();
}

async function fileSha(path: string, size: number): Promise<string> {
  const h = createHash("sha256");
  if (size < 8 << 20) return h.update(await readFile(path)).digest("hex");
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest("hex");
}

/**
 * The entries of the tree at `root`, hashing only files whose size or mtime differ from `known`
 * (all of them without it). `signal` is checked between entries.
 */
export async function walkTree(
  root: string,
  known?: Readonly<Record<string, Entry>>,
  signal?: AbortSignal,
): Promise<Record<string, Entry>> {
  const entries: Record<string, Entry> = {};
  const walk = async (rel: string): Promise<void> => {
    for (const name of (await readdir(join(root, rel))).sort()) {
      signal?.throwIfAborted();
      const r = rel === "" ? name : `${rel}/${name}`;
      if (isRecordExempt(r)) continue;
      const p = join(root, r);
      const st = await lstat(p, { bigint: true });
      const mode = Number(st.mode & 0o7777n);
      if (st.isSymbolicLink()) entries[r] = ["l", mode, await readlink(p), 0, "0"];
      else if (st.isDirectory()) {
        entries[r] = ["d", mode, "", 0, "0"];
        await walk(r);
      } else {
        const size = Number(st.size);
        const mtime = st.mtimeNs.toString();
        const k = known?.[r];
        const same = k && k[0] === "f" && k[3] === size && k[4] === mtime;
        entries[r] = ["f", mode, same ? k[2] : await fileSha(p, size), size, mtime];
      }
    }
  };
  await walk("");
  return entries;
}

/** Reads `<dir>/tree-record.json` (undefined when absent or not a record). */
export async function readTreeRecord(dir: string): Promise<TreeRecord | undefined> {
  try {
    return TreeRecord.parse(JSON.parse(await readFile(join(dir, TREE_RECORD_FILE), "utf8")));
  } catch {
    return undefined;
  }
}

/** Records the tree `<dir>/tree` into `<dir>/tree-record.json` (every file hashed) and returns it. */
export async function recordTree(dir: string, signal?: AbortSignal): Promise<TreeRecord> {
  const entries = await walkTree(join(dir, "tree"), undefined, signal);
  const record: TreeRecord = { version: 1, digest: digestOf(entries), entries };
  await writeFileAtomic(join(dir, TREE_RECORD_FILE), JSON.stringify(record));
  return record;
}

/** The snapshot's record: the one kept in the cache, or a new one when it has none yet. */
export async function treeRecordOf(dir: string, signal?: AbortSignal): Promise<TreeRecord> {
  return (await readTreeRecord(dir)) ?? (await recordTree(dir, signal));
}

/** How the tree is now against its record: the paths whose content, kind or mode differ. */
export interface TreeCheck {
  readonly digest: string;
  readonly changed: readonly string[];
}

/**
 * Checks `<dir>/tree` against its record (only files whose times moved are hashed). When nothing
 * differs but times did, the record takes the new times (written atomically; content unchanged).
 */
export async function checkTree(dir: string, record: TreeRecord, signal?: AbortSignal): Promise<TreeCheck> {
  const now = await walkTree(join(dir, "tree"), record.entries, signal);
  const changed = changedPaths(record.entries, now);
  if (changed.length === 0 && JSON.stringify(now) !== JSON.stringify(record.entries)) {
    const refreshed: TreeRecord = { ...record, entries: now };
    await writeFileAtomic(join(dir, TREE_RECORD_FILE), JSON.stringify(refreshed));
  }
  return { digest: changed.length === 0 ? record.digest : digestOf(now), changed };
}
