import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { UnmountRecord } from "../gc/unmount.js";
import { forkSnapshot } from "../snapshots/build.js";
import type { Snapshot } from "../snapshots/manifest.js";

/** A rollout's forks of its snapshots: one per attempt, under the run's scratch directory. */

/** A fork whose writes are bounded by the task's disk limit (overlay: a tmpfs upper layer). */
export async function forkIn(
  scratch: string,
  snapshot: Snapshot,
  name: string,
  diskMb: number,
  signal: AbortSignal,
) {
  const dest = join(scratch, "forks", `${name}-${randomBytes(3).toString("hex")}`);
  return await forkSnapshot(snapshot, { dest, quotaMb: diskMb, signal });
}

/**
 * The deps dir of a fork of `snapshot` at `tree`: none for a snapshot copied from its image (the
 * workers keep the image's own dependency environment, e.g. CARGO_HOME=/cargo-home). Pure.
 */
export function depsOfSnapshot(snapshot: Pick<Snapshot, "manifest">, tree: string): string | undefined {
  return snapshot.manifest.fromImage ? undefined : join(tree, "deps");
}

/**
 * Releases a fork, saying when a mount stayed busy (detached lazily) or could not be removed
 * (left, with the fork, to `flakegym gc`).
 */
export async function releaseFork(f: { release(): Promise<UnmountRecord[]> }, note?: (m: string) => void) {
  try {
    for (const r of await f.release()) {
      if (r.result === "lazy" || r.result === "failed") note?.(`fork: ${r.path}: ${r.result} (${r.detail})`);
    }
  } catch (err) {
    note?.(`fork: ${(err as Error).message}`);
  }
}
