# lib.flakegym.<system>: the facts the runner reads from the flake when Nix is present
# (packages/runner/src/nix/flake-facts.ts parses this shape with zod; keep the two in step).
# Image tags are the images' Nix output hashes, so evaluating this evaluates the images.
{
  system,
  profiles,
  images,
  snapshots,
  cline,
}:
{
  schemaVersion = 1;
  inherit system;
  cline = {
    inherit (cline) version integrity;
    package = "cline-core";
  };
  runner = {
    package = "flakegym";
    app = "rollout";
  };
  profiles = builtins.mapAttrs (id: p: {
    inherit (p) nixName smoke;
    devShell = p.nixName;
    image = {
      package = "${p.nixName}-container";
      name = images.${id}.imageName;
      tag = images.${id}.imageTag;
    };
  }) profiles;
  snapshots = builtins.mapAttrs (task: s: {
    inherit (s.snapshot.keyInputs)
      format
      repo
      commit
      profile
      install
      smoke
      network
      toolchainCommands
      ;
    inherit (s.snapshot) keyFile;
    image = {
      package = "snapshot-${task}";
      name = s.imageName;
      tag = s.imageTag;
    };
  }) snapshots;
}
