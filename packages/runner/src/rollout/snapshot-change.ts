import { FlakegymError } from "../errors.js";
import type { SnapshotRef } from "./deps.js";

/**
 * Why a resumed task may not use its snapshot: the cached tree is not the one the run started from,
 * so the task's group would mix two starting points. Edited files are named (first few); a tree
 * whose record has another digest was rebuilt with other content. Pure.
 */
export function snapshotChange(
  taskId: string,
  stored: { readonly treeDigest?: string } | undefined,
  snap: SnapshotRef,
): FlakegymError | undefined {
  if (stored?.treeDigest === undefined || snap.treeDigest === undefined) return undefined;
  const changed = snap.treeChanged ?? [];
  const key = snap.key.slice(0, 12);
  const next =
    "restore that cache entry as it was (or remove it so it is rebuilt, if the build is reproducible), or run this task in a new run (another --out)";
  if (changed.length > 0) {
    const shown = changed.slice(0, 5).join(", ");
    const more = changed.length > 5 ? ` and ${changed.length - 5} more` : "";
    return new FlakegymError(
      "E_SNAPSHOT_CHANGED",
      `task ${taskId}: the cached snapshot tree ${key}… was edited since it was built: ${shown}${more} (tree/ of the snapshot's cache entry; content differs from its tree-record.json); its group would mix two starting points: ${next}`,
    );
  }
  if (stored.treeDigest === snap.treeDigest) return undefined;
  return new FlakegymError(
    "E_SNAPSHOT_CHANGED",
    `task ${taskId}: the cached snapshot tree ${key}… is not the one this run started from (run.json tasks.${taskId}.treeDigest ${stored.treeDigest.slice(0, 19)}…, the cache's now ${snap.treeDigest.slice(0, 19)}…: rebuilt with other content); its group would mix two starting points: ${next}`,
  );
}
