import { UsageError } from "../errors.js";
import type { SnapshotSpec } from "../snapshots/spec.js";

/**
 * The `nix build --impure --expr` expression that builds a task's snapshot image with the flake's
 * `lib.mkSnapshotImage` (nix/task-snapshot.nix), from the runner's own snapshot spec, so the key
 * the build computes is the runner's. Every profile has a builder (nix/snapshot-deps/<profile>.nix);
 * a source whose Go modules or Python distributions need a hash pin fails evaluation saying which.
 * Pure.
 */

/** A Nix string literal: quotes, backslashes and `${` escaped; other control characters refused. */
export function nixString(s: string): string {
  const control = [...s].some((c) => {
    const code = c.charCodeAt(0);
    return code < 0x20 && c !== "\n" && c !== "\r" && c !== "\t";
  });
  if (control) {
    throw new UsageError(`cannot pass ${JSON.stringify(s)} to Nix: it holds a control character`);
  }
  const body = s
    .replace(/\\/g, "\\\\")
    .replace(/"/g, '\\"')
    .replace(/\$\{/g, "\\${")
    .replace(/\n/g, "\\n")
    .replace(/\r/g, "\\r")
    .replace(/\t/g, "\\t");
  return `"${body}"`;
}

const list = (xs: readonly string[]) => `[ ${xs.map(nixString).join(" ")} ]`;

/** Where the snapshot's source comes from: fetched by narHash, or a local directory (impure). */
export type SnapshotSource = { readonly narHash: string } | { readonly dir: string };

export function snapshotImageExpr(
  flakeRef: string,
  system: string,
  spec: Pick<SnapshotSpec, "taskId" | "repo" | "commit" | "profile" | "install" | "smoke" | "network">,
  source: SnapshotSource,
): string {
  const src =
    "narHash" in source
      ? `narHash = ${nixString(source.narHash)};`
      : `src = builtins.path { path = ${nixString(source.dir)}; name = "source"; };`;
  return [
    `(builtins.getFlake ${nixString(flakeRef)}).lib.mkSnapshotImage {`,
    `  system = ${nixString(system)};`,
    `  task = ${nixString(spec.taskId)};`,
    `  repo = ${nixString(spec.repo)};`,
    `  commit = ${nixString(spec.commit)};`,
    `  profile = ${nixString(spec.profile)};`,
    `  install = ${list(spec.install)};`,
    `  smoke = ${list(spec.smoke)};`,
    `  network = ${nixString(spec.network)};`,
    `  ${src}`,
    "}",
  ].join("\n");
}
