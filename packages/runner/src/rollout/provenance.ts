import { fileURLToPath } from "node:url";

/**
 * The Nix store path flakegym runs from, when it was built by the flake (`nix run .#rollout`):
 * the runner's own files then live under `/nix/store/<hash>-flakegym-<version>/`. Pure.
 */
export function nixStorePathOf(file: string): string | undefined {
  const m = /^(\/nix\/store\/[0-9a-z]{32}-[^/]+)(?:\/|$)/.exec(file);
  return m?.[1];
}

/** This module's store path, or `FLAKEGYM_NIX_STORE_PATH` when a wrapper sets it. */
export function runningStorePath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.FLAKEGYM_NIX_STORE_PATH || nixStorePathOf(fileURLToPath(import.meta.url));
}
