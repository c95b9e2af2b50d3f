/**
 * The Nix store path (`/nix/store/<hash>-<name>`) holding `file`, when it is in the store (the
 * runner built by the flake, a store-built node). Pure.
 */
export function nixStorePathOf(file: string): string | undefined {
  const m = /^(\/nix\/store\/[0-9a-z]{32}-[^/]+)(?:\/|$)/.exec(file);
  return m?.[1];
}
