import { basename, dirname, join } from "node:path";

/**
 * The Nix this process runs under. `nix run` leaves no trace of which `nix` ran it, so a wrapper
 * that runs the flake with another Nix than PATH's (scripts/nix-standin: the modern one, with its
 * own store) names it in FLAKEGYM_NIX_BIN; otherwise it is PATH's `nix`. Pure.
 */
export const NIX_BIN_ENV = "FLAKEGYM_NIX_BIN";

export function runningNixBin(env: Readonly<Record<string, string | undefined>>): string {
  return env[NIX_BIN_ENV] || "nix";
}

/** `nix-store` beside that `nix` (the same installation and store), or PATH's. Pure. */
export function runningNixStoreBin(env: Readonly<Record<string, string | undefined>>): string {
  const nix = runningNixBin(env);
  return nix.includes("/") && basename(nix) === "nix" ? join(dirname(nix), "nix-store") : "nix-store";
}
