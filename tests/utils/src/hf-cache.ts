import { createHash } from "node:crypto";
import { mkdir, readFile, symlink, writeFile } from "node:fs/promises";
import { dirname, join, relative } from "node:path";

/**
 * Writes a dataset into a Hugging Face hub cache in the hub's own layout (what `hf download` leaves):
 * `datasets--<org>--<name>/blobs/<sha256>` holds each file's bytes, `snapshots/<commit>/<path>` is a
 * relative symlink to its blob, and `refs/<revision>` names the commit. `e2e-real`'s hf-cache test
 * checks this layout with the `huggingface_hub` package's own cache scanner.
 */
export async function writeHubDataset(
  cache: string,
  repo: string,
  files: Readonly<Record<string, string>>,
  o: { commit?: string; revision?: string } = {},
): Promise<{ folder: string; commit: string }> {
  const folder = join(cache, `datasets--${repo.replace("/", "--")}`);
  const commit = o.commit ?? createHash("sha1").update(repo).digest("hex");
  for (const [path, source] of Object.entries(files)) {
    const bytes = await readFile(source);
    const blob = join(folder, "blobs", createHash("sha256").update(bytes).digest("hex"));
    await mkdir(dirname(blob), { recursive: true });
    await writeFile(blob, bytes);
    const link = join(folder, "snapshots", commit, path);
    await mkdir(dirname(link), { recursive: true });
    await symlink(relative(dirname(link), blob), link);
  }
  await mkdir(join(folder, "refs"), { recursive: true });
  await writeFile(join(folder, "refs", o.revision ?? "main"), commit);
  return { folder, commit };
}
