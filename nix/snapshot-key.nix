# The snapshot key: sha256 over {repo, commit, profile, install commands, toolchain identity}, the
# same inputs the runner's snapshots (packages/runner/src/snapshots) key on. Nix serialises with
# builtins.toJSON, which sorts keys; the runner must hash the same canonical JSON for the two keys
# to agree (the seam is described in docs/nix.md). Store-path context is dropped: the key names
# the inputs, it does not depend on them being built.
{
  repo,
  commit,
  profile,
  install,
  toolchain,
}:
let
  inputs = {
    inherit
      repo
      commit
      profile
      install
      ;
    toolchain = builtins.unsafeDiscardStringContext toolchain;
  };
  canonical = builtins.toJSON inputs;
in
{
  inherit inputs canonical;
  key = builtins.hashString "sha256" canonical;
}
