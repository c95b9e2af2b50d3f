import { createHash } from "node:crypto";
import { join } from "node:path";
import type { ProfileId } from "@flakegym/profiles";
import { flakegymCacheRoot } from "../cache-root.mjs";

/** Bumped when the snapshot layout or build procedure changes, so old entries are not reused. */
export const SNAPSHOT_FORMAT = 1;

/** Everything a snapshot's content depends on. */
export interface SnapshotKeyInput {
  /** Clone URL, or `catalog:<id>` for a catalog directory (its commit pins the content). */
  readonly repo: string;
  readonly commit: string;
  readonly profile: ProfileId;
  readonly install: readonly string[];
  readonly smoke: readonly string[];
  /** `--version`-style outputs of the profile's tools, as seen inside the sandbox. */
  readonly toolchain: readonly string[];
  readonly network: "none" | "required";
  /** The checkout policy's version (git sources; absent in keys made before it existed). */
  readonly checkout?: number;
  /** The interpreter a python task's venv is made with: its version and path (absent: the sandbox's python3). */
  readonly python?: string;
}

/** sha256 over a canonical JSON of the inputs (pure). */
export function snapshotKey(input: SnapshotKeyInput): string {
  const canonical = JSON.stringify({
    format: SNAPSHOT_FORMAT,
    repo: input.repo,
    commit: input.commit,
    profile: input.profile,
    install: input.install,
    smoke: input.smoke,
    toolchain: input.toolchain,
    network: input.network,
    ...(input.checkout === undefined ? {} : { checkout: input.checkout }),
    ...(input.python === undefined ? {} : { python: input.python }),
  });
  return createHash("sha256").update(canonical).digest("hex");
}

/** `--cache-dir`, else `$FLAKEGYM_CACHE/snapshots`, else `~/.cache/flakegym/snapshots`. */
export function defaultSnapshotCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(flakegymCacheRoot(env), "snapshots");
}
