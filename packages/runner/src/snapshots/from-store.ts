import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { FlakegymError } from "../errors.js";
import { STORE_DEPS_DIRS } from "../nix/store-outputs.js";
import { type ImageTreeReader, snapshotExec } from "./from-image.js";

/**
 * A snapshot work tree the flake built (`snapshot-<task>.snapshot.workspace`, nix/snapshot-workspace.nix:
 * `<out>/workspace` and `<out>/snapshot.json`), used as a snapshot image's tree is
 * (snapshotFromImage): copied once into the snapshot cache, owned and made writable there (never
 * in the store), forked per trajectory; nothing is installed host-side. `ref` is the store path.
 * Its dependency dirs the local backend can use (STORE_DEPS_DIRS: cargo-home) are copied into the
 * snapshot's deps dir.
 */

/** snapshot.json's fields as the labels snapshotFromImage checks against the task's spec. Pure. */
export function storeSnapshotLabels(json: unknown): Record<string, string> {
  const j = (json ?? {}) as Record<string, unknown>;
  const str = (k: string) => (typeof j[k] === "string" ? (j[k] as string) : "");
  return {
    "org.flakegym.task": str("task"),
    "org.flakegym.snapshot.commit": str("commit"),
    "org.flakegym.snapshot.profile": str("profile"),
  };
}

export function storeTreeReader(timeoutMs = 10 * 60_000): ImageTreeReader {
  const copy = async (from: string, dest: string, signal?: AbortSignal) => {
    // -a keeps symlinks as they are and the store's modes; the caller owns and opens them up
    await snapshotExec("cp", ["-a", "--", from, dest], {
      timeoutMs,
      signal,
      hint: "check free space in the snapshot cache (flakegym gc) and that the store path exists",
    });
  };
  return {
    async labels(ref) {
      const file = join(ref, "snapshot.json");
      try {
        return storeSnapshotLabels(JSON.parse(await readFile(file, "utf8")));
      } catch (e) {
        throw new FlakegymError(
          "E_SNAPSHOT_IMAGE",
          `${file} cannot be read as JSON: ${(e as Error).message}`,
          {
            hint: "the flake's snapshot output is incomplete: rebuild it (nix build .#snapshot-<task>)",
          },
        );
      }
    },
    copyWorkspace: (ref, dest, signal) => copy(join(ref, "workspace"), dest, signal),
    async copyDeps(ref, deps, signal) {
      const copied: string[] = [];
      for (const [dir, sub] of Object.entries(STORE_DEPS_DIRS)) {
        if (!(await stat(join(ref, dir)).catch(() => undefined))?.isDirectory()) continue;
        await copy(join(ref, dir), join(deps, sub), signal);
        copied.push(dir);
      }
      return copied;
    },
    copyCommand: (ref) => `cp -a ${ref}/workspace`,
  };
}
