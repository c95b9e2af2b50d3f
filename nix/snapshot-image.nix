# A per-repository snapshot image: the profile image (same toolchain, Node, Cline layer and
# entrypoint) plus the snapshot's work tree at /workspace, copied into the image's customisation
# layer so it is writable in the container and `target/` is reused as is. The snapshot key, as
# the runner computes it, is in /flakegym/snapshot.json (it depends on the toolchain's
# `--version` output, known only once built); the labels carry the key's other inputs.
{ mkImage }:
{
  spec,
  profile,
  workspace,
}:
let
  keyFile = "/flakegym/snapshot.json";
in
mkImage {
  inherit profile;
  name = "flakegym/snapshot-${spec.task}";
  extraCommands = ''
    mkdir -p workspace cargo-home flakegym
    cp -a ${workspace}/workspace/. workspace/
    cp ${workspace}/cargo-home/config.toml cargo-home/config.toml
    cp ${workspace}/snapshot.json flakegym/snapshot.json
    chmod -R u+w workspace cargo-home flakegym
  '';
  extraEnv = {
    CARGO_HOME = "/cargo-home";
    FLAKEGYM_TASK = spec.task;
    FLAKEGYM_SNAPSHOT_FILE = keyFile;
  };
  extraLabels = {
    "org.flakegym.task" = spec.task;
    "org.flakegym.snapshot.key-file" = keyFile;
    "org.flakegym.snapshot.format" = toString workspace.snapshotFormat;
    "org.flakegym.snapshot.repo" = spec.repo;
    "org.flakegym.snapshot.commit" = spec.commit;
    "org.flakegym.snapshot.profile" = spec.profile;
    "org.flakegym.snapshot.install" = builtins.toJSON spec.install;
    "org.flakegym.snapshot.smoke" = builtins.toJSON spec.smoke;
    "org.flakegym.snapshot.network" = spec.network;
  };
  extraPassthru = {
    snapshot = {
      inherit workspace keyFile;
      inherit (workspace) keyInputs;
    };
  };
}
