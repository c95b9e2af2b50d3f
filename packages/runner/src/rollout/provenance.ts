import { fileURLToPath } from "node:url";
import { nixStorePathOf } from "../nix/store-path.js";

/** The runner's files live under `/nix/store/<hash>-flakegym-<version>/` when the flake built it. */
export { nixStorePathOf };

/** This module's store path, or `FLAKEGYM_NIX_STORE_PATH` when a wrapper sets it. */
export function runningStorePath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.FLAKEGYM_NIX_STORE_PATH || nixStorePathOf(fileURLToPath(import.meta.url));
}

/**
 * `"standin"` when a flake build runs under scripts/nix-standin (its toolchains are the stand-in
 * nixpkgs' copies of the build machine's tools, not public nixpkgs); undefined otherwise. Pure.
 */
export function runningNixpkgs(
  storePath: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): "standin" | undefined {
  return storePath !== undefined && env.FLAKEGYM_NIXPKGS === "standin" ? "standin" : undefined;
}
