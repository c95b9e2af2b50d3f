import { createHash } from "node:crypto";
import { lstat, readdir, readlink } from "node:fs/promises";
import { join } from "node:path";

/**
 * A snapshot tree's stamp: sha256 over every entry's relative path, kind, permission bits, size and
 * modification time in nanoseconds (a symlink: its target), in sorted order. `run.json` keeps it per
 * task, so `--resume` refuses a task whose cached tree was edited since the run started (its groups
 * would mix two starting points). Metadata, not content: a 460 MB tree of 16 k files is stamped
 * by lstat alone (hashing its content took 6 s on 2 busy cores); every ordinary edit (an editor,
 * `sed -i`, `cp`, a checkout) moves a size or an mtime. A tree rebuilt since (its cache entry
 * removed) gets new times and is refused too: its files may differ. Git's own bookkeeping that
 * reading the tree may rewrite (the index's stat cache, reflogs) is left out.
 */

/** Whether a path (relative to the tree, `/`-separated) is git bookkeeping left out of the stamp. Pure. */
export function isDigestExempt(rel: string): boolean {
  return /(^|\/)\.git\/(index$|logs(\/|$))/.test(rel);
}

/** One entry's line in the stamp. Pure. */
export function stampLine(rel: string, kind: "f" | "l" | "d", mode: bigint, what: string): string {
  return `${kind} ${(mode & 0o7777n).toString(8)} ${JSON.stringify(rel)} ${what}\n`;
}

/** The stamp of the tree at `root` (`stat-sha256:<hex>`); `signal` is checked between entries. */
export async function treeStamp(root: string, signal?: AbortSignal): Promise<string> {
  const all = createHash("sha256");
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(join(root, rel))).sort();
    for (const name of names) {
      signal?.throwIfAborted();
      const r = rel === "" ? name : `${rel}/${name}`;
      if (isDigestExempt(r)) continue;
      const p = join(root, r);
      const st = await lstat(p, { bigint: true });
      if (st.isSymbolicLink()) all.update(stampLine(r, "l", st.mode, await readlink(p)));
      else if (st.isDirectory()) {
        all.update(stampLine(r, "d", st.mode, ""));
        await walk(r);
      } else all.update(stampLine(r, "f", st.mode, `${st.size} ${st.mtimeNs}`));
    }
  };
  await walk("");
  return `stat-sha256:${all.digest("hex")}`;
}
