import { lstat, readdir } from "node:fs/promises";
import { join, sep } from "node:path";
import { FlakegymError } from "../errors.js";
import { openPlainFileUnder } from "../safe-read/open-plain-file.js";

/**
 * Plain reads of a hostile tree from the host: size-capped, never following a symlink (neither
 * the file nor any directory on the way), regular files only, through the one opener the viewer
 * uses too (`openPlainFileUnder`: the opened descriptor must resolve under the root). Nothing here
 * interprets content.
 */

/** Default cap of one file read from a target repository. */
export const MAX_TARGET_FILE_BYTES = 256 * 1024;

/** True when `rel` has no empty, `.` or `..` part (a path that stays inside its root). */
export function isInsideRelative(rel: string): boolean {
  if (rel.length === 0 || rel.startsWith("/")) return false;
  return rel.split("/").every((p) => p !== "" && p !== "." && p !== "..");
}

/**
 * Reads `root/rel` as UTF-8 when it is a regular file of at most `maxBytes` reached without any
 * symlink; undefined when it is absent, a symlink, not a regular file or too large.
 */
export async function readTargetFile(
  root: string,
  rel: string,
  maxBytes = MAX_TARGET_FILE_BYTES,
): Promise<string | undefined> {
  if (!isInsideRelative(rel)) return undefined;
  const fh = await openPlainFileUnder(root, rel.split("/"));
  if (!fh) return undefined;
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.size > maxBytes) return undefined;
    const buf = Buffer.alloc(Math.min(st.size, maxBytes));
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead).toString("utf8");
  } finally {
    await fh.close();
  }
}

/** Names of the regular files (no symlinks) directly in `root/rel`, sorted; [] when not a plain dir. */
export async function listTargetDir(root: string, rel: string, max = 200): Promise<string[]> {
  if (rel !== "" && !isInsideRelative(rel)) return [];
  let cur = root;
  for (const part of rel === "" ? [] : rel.split("/")) {
    cur = join(cur, part);
    const st = await lstat(cur).catch(() => undefined);
    if (!st?.isDirectory()) return [];
  }
  const entries = await readdir(cur, { withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => e.name)
    .sort()
    .slice(0, max);
}

/** Reads a required JSON-ish text file or throws naming it (used for artifacts and the contract). */
export async function readRequiredTargetFile(root: string, rel: string, maxBytes: number): Promise<string> {
  const text = await readTargetFile(root, rel, maxBytes);
  if (text === undefined) {
    throw new FlakegymError(
      "E_ARTIFACT_MISSING",
      `${rel.split("/").join(sep)} is missing, a symlink, not a regular file or larger than ${maxBytes} bytes`,
      { hint: "write it as a plain file (no symlink) under the limit" },
    );
  }
  return text;
}
