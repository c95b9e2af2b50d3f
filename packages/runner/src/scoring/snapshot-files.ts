import { lstat, readFile } from "node:fs/promises";
import { join } from "node:path";

/** Regular files read from a snapshot's work tree, nothing followed (hidden tests are made from them). */

/** One hidden test file as installed. */
export interface InstalledFile {
  readonly path: string;
  readonly content: Buffer;
  readonly executable: boolean;
}

const lstatOrUndefined = (path: string) =>
  lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT" || err.code === "ENOTDIR") return undefined;
    throw err;
  });

/**
 * The regular file at `rel` under `root` (its content and exec bit), undefined when absent, null
 * when it or a directory on the way is a symlink or not what it should be: nothing is followed.
 */
export async function regularFile(
  root: string,
  rel: string,
): Promise<{ content: Buffer; executable: boolean } | null | undefined> {
  const parts = rel.split("/");
  for (let i = 1; i < parts.length; i++) {
    const dir = await lstatOrUndefined(join(root, ...parts.slice(0, i)));
    if (dir === undefined) return undefined;
    if (!dir.isDirectory()) return null;
  }
  const st = await lstatOrUndefined(join(root, rel));
  if (st === undefined) return undefined;
  if (!st.isFile()) return null;
  return { content: await readFile(join(root, rel)), executable: (st.mode & 0o111) !== 0 };
}

/**
 * A reader of the snapshot's text before the change, for the judge's code reading: a path from the
 * agent's diff is read only when it is plain and relative (no `..`, `.`, empty or absolute part) and a
 * regular file with no symlink on the way; anything else is undefined.
 */
export function snapshotTextReader(root: string): (rel: string) => Promise<string | undefined> {
  return async (rel) => {
    const parts = rel.split("/");
    if (rel.startsWith("/") || parts.some((p) => p === "" || p === "." || p === "..")) return undefined;
    const f = await regularFile(root, rel).catch(() => undefined);
    return f ? f.content.toString("utf8") : undefined;
  };
}
