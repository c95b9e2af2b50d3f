import { mkdir, readdir, rename, rm } from "node:fs/promises";
import { UsageError } from "../errors.js";
import { writeJsonAtomic } from "./jsonl.js";
import { tempPathBeside } from "./temp-name.js";

/**
 * A directory of files written whole, as `writeFileAtomic` writes a file: the files go into a temp
 * directory beside it (`.<name>.<pid>.<rand>.tmp`, which `flakegym gc --dir` knows), which then
 * replaces the directory by rename. So a reader, a kill mid-write or a second writer at once never
 * sees a mix: the directory is one writer's whole output (the last to finish), and files of an
 * older, larger output do not stay. A directory holding anything `isOurs` does not own is refused
 * untouched (a user's own files are never removed).
 */
export async function replaceDirAtomic(
  dir: string,
  files: readonly (readonly [name: string, value: unknown])[],
  isOurs: (name: string) => boolean,
  flag: string,
): Promise<void> {
  const foreign = (await readdir(dir).catch(() => [] as string[])).find((n) => !isOurs(n));
  if (foreign !== undefined)
    throw new UsageError(
      `${flag} ${dir} holds ${dir}/${foreign}, which this export did not write: it replaces the whole directory`,
      `pick a new ${flag} directory (or one holding only an earlier export of this format)`,
    );
  const tmp = tempPathBeside(dir);
  const old = tempPathBeside(dir);
  try {
    await mkdir(tmp, { recursive: true });
    for (const [name, value] of files) await writeJsonAtomic(`${tmp}/${name}`, value);
    await swapIn(tmp, dir, old);
  } finally {
    await rm(tmp, { recursive: true, force: true });
    await rm(old, { recursive: true, force: true });
  }
}

/** Moves `dir` aside to `old` and `tmp` into its place; retried while another writer swaps too. */
async function swapIn(tmp: string, dir: string, old: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    await rm(old, { recursive: true, force: true });
    await rename(dir, old).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== "ENOENT") throw err;
    });
    try {
      await rename(tmp, dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // another writer put its directory in place between our two renames: move it aside again
      if ((code !== "ENOTEMPTY" && code !== "EEXIST") || attempt >= 20) throw err;
    }
  }
}
