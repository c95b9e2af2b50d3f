import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { UnmountRecord } from "../gc/unmount.js";
import { forkSnapshot } from "../snapshots/build.js";
import type { Fork, ForkMethod } from "../snapshots/fork.js";
import type { Snapshot } from "../snapshots/manifest.js";

/** A rollout's forks of its snapshots: one per attempt, under the run's scratch directory. */

/** An attempt's fork, or (`method: "none"`) the snapshot itself where the worker brings its own workspace. */
export type AttemptFork = Omit<Fork, "method"> & {
  readonly method: ForkMethod | "none";
  readonly workspace: string;
  readonly deps: string;
};

/**
 * A fork whose writes are bounded by the task's disk limit (overlay: a tmpfs upper layer); none
 * when the backend's workers do not start from a fork on this host (`hostForks`: a remote
 * allocation brings its own workspace), which then names the snapshot's own tree, never written.
 */
export async function forkIn(
  scratch: string,
  snapshot: Snapshot,
  name: string,
  diskMb: number,
  signal: AbortSignal,
  hostForks = true,
): Promise<AttemptFork> {
  if (!hostForks) return unforked(snapshot);
  const dest = join(scratch, "forks", `${name}-${randomBytes(3).toString("hex")}`);
  return await forkSnapshot(snapshot, { dest, quotaMb: diskMb, signal });
}

/** The snapshot's own tree in a fork's shape: nothing made, nothing to release. Pure. */
export function unforked(snapshot: Pick<Snapshot, "tree">): AttemptFork {
  return {
    method: "none",
    tree: snapshot.tree,
    quota: "none",
    forkMs: 0,
    workspace: join(snapshot.tree, "workspace"),
    deps: join(snapshot.tree, "deps"),
    release: async () => [],
  };
}

/**
 * The deps dir of a fork of `snapshot` at `tree`: none for a snapshot copied from its image (the
 * workers keep the image's own dependency environment, e.g. CARGO_HOME=/cargo-home), unless its
 * dependency dirs were copied into it (a store snapshot's cargo-home). Pure.
 */
export function depsOfSnapshot(snapshot: Pick<Snapshot, "manifest">, tree: string): string | undefined {
  const from = snapshot.manifest.fromImage;
  return from && !from.deps?.length ? undefined : join(tree, "deps");
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
