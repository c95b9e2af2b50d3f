import { createHash } from "node:crypto";
import type { InstalledFile } from "./snapshot-files.js";

/**
 * The hidden tests patch applied to the snapshot's files, remembered by what went in (issue 47):
 * every trajectory of a task is scored with the same patch on the same snapshot files, and the
 * `git init` + `git apply` that compute them were two process spawns per trajectory from the
 * runner. The key is a hash of the patch and of every base file's bytes and exec bit, read again at
 * each call (never a path or an mtime), so another snapshot, patch or file content is another key;
 * only our own inputs go in (the task's patch, the cached snapshot's work tree), never a workspace
 * an agent touched.
 */

/** What one test file was in the snapshot before the patch: absent (`undefined`) or a regular file. */
export type BaseFile = { readonly content: Buffer; readonly executable: boolean } | undefined;

/** The key of a patch applied to these base files, in this order. Pure. */
export function appliedPatchKey(patch: string, bases: readonly (readonly [string, BaseFile])[]): string {
  const h = createHash("sha256")
    .update(`patch ${Buffer.byteLength(patch)}\n`)
    .update(patch);
  for (const [path, base] of bases) {
    h.update(`\nfile ${Buffer.byteLength(path)} ${path}\n`);
    if (base === undefined) h.update("absent\n");
    else h.update(`${base.executable ? "x" : "-"} ${base.content.length}\n`).update(base.content);
  }
  return h.digest("hex");
}

/** The patched files (no canary), or `null`: they cannot all be bound as regular files. */
export type AppliedFiles = readonly InstalledFile[] | null;

/** A bounded memo of applied patches: the oldest entry goes first past `max`. */
export class AppliedPatchMemo {
  private readonly entries = new Map<string, AppliedFiles>();

  constructor(private readonly max = 32) {}

  get(key: string): AppliedFiles | undefined {
    return this.entries.get(key);
  }

  set(key: string, files: AppliedFiles): void {
    this.entries.delete(key);
    this.entries.set(key, files);
    while (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  get size(): number {
    return this.entries.size;
  }
}
