# lib.mkSnapshotImage: a snapshot image for any task or dataset row (profiles rust, go, node,
# python, c), from its pins. The source is fetched by commit and narHash (`builtins.fetchTree`, so
# evaluation is pure and the fetch is verified), or given as `src`; dependencies are vendored
# offline by nix/snapshot-deps/<profile>.nix (Rust from Cargo.lock and Node from package-lock.json
# need no hash; Go's `go mod vendor` needs `vendorHash` and a Python wheel set `wheelsHash` when
# the source has dependencies); `install` runs offline in the Nix build; `smoke`, like `install`,
# is a key input. The runner instantiates it with `nix build --impure --expr` (docs/reference/nix.md),
# passing the fields of its own snapshot spec, so the key computed in the build
# (nix/snapshot-key.mjs) is the runner's.
{
  profiles,
  mkSnapshotImage,
  mkSnapshotWorkspace,
  system,
}:
{
  task,
  repo,
  commit,
  narHash ? null,
  src ? null,
  # a path the source's files are read from at evaluation (a catalog task's directory in the flake),
  # so evaluating needs no store copy of `src` (a fresh store, `flake check --no-build`)
  readable ? null,
  profile ? "rust",
  install ? [ ],
  smoke ? [ ],
  network ? "none",
  # go: the NAR hash of `go mod vendor`'s output (only when go.mod requires modules)
  vendorHash ? null,
  # python: the NAR hash of the downloaded wheel set (only when the source declares dependencies)
  wheelsHash ? null,
}:
let
  source =
    if src != null then
      src
    else if narHash == null then
      throw "lib.mkSnapshotImage ${task}: give `narHash` (the source's NAR hash, e.g. from `nix flake prefetch git+${repo}?rev=${commit}`) or `src`"
    else
      builtins.fetchTree {
        type = "git";
        url = repo;
        rev = commit;
        inherit narHash;
      };
  spec = {
    inherit
      task
      repo
      commit
      profile
      install
      smoke
      network
      ;
    src = source;
  }
  // (if readable != null then { inherit readable; } else { });
in
if !(profiles ? ${profile}) then
  throw "lib.mkSnapshotImage ${task}: no profile '${profile}' (profiles.json has: ${builtins.concatStringsSep ", " (builtins.attrNames profiles)})"
else
  mkSnapshotImage {
    inherit spec;
    profile = profiles.${profile};
    workspace = mkSnapshotWorkspace {
      inherit spec system;
      profile = profiles.${profile};
      pins = { inherit vendorHash wheelsHash; };
    };
  }
