# A per-repository snapshot image: the profile image (same toolchain, Node, Cline layer and
# entrypoint) plus the snapshot's work tree at /workspace, copied into the image's customisation
# layer so it is writable in the container and `target/` is reused as is. Its labels carry the
# snapshot key and the key's inputs, so the runner can match the image to its own snapshots.
{
  mkImage,
  snapshotKey,
}:
{
  spec,
  profile,
  workspace,
}:
let
  key = snapshotKey {
    inherit (spec) repo commit install;
    profile = spec.profile;
    toolchain = "${profile.toolchain}";
  };
in
mkImage {
  inherit profile;
  name = "flakegym/snapshot-${spec.task}";
  extraCommands = ''
    mkdir -p workspace cargo-home
    cp -a ${workspace}/workspace/. workspace/
    cp ${workspace}/cargo-home/config.toml cargo-home/config.toml
    chmod -R u+w workspace cargo-home
  '';
  extraEnv = {
    CARGO_HOME = "/cargo-home";
    FLAKEGYM_TASK = spec.task;
    FLAKEGYM_SNAPSHOT_KEY = key.key;
  };
  extraLabels = {
    "org.flakegym.task" = spec.task;
    "org.flakegym.snapshot.key" = key.key;
    "org.flakegym.snapshot.repo" = spec.repo;
    "org.flakegym.snapshot.commit" = spec.commit;
    "org.flakegym.snapshot.profile" = spec.profile;
    "org.flakegym.snapshot.install" = builtins.toJSON spec.install;
    "org.flakegym.snapshot.toolchain" = key.inputs.toolchain;
  };
  extraPassthru = {
    snapshot = {
      inherit (key) key inputs canonical;
      inherit workspace;
    };
  };
}
