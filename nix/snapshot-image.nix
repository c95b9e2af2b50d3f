# A per-repository snapshot image: the profile image (same toolchain, Node, Cline layer and
# entrypoint) plus the snapshot's work tree at /workspace, copied into the image's customisation
# layer so it is writable in the container and what the install commands built (Rust's target/) is
# reused as is; the vendored dependencies' own directories (`imageDirs`: /cargo-home,
# /python-deps) and environment (`imageEnv`) come with it. The snapshot key, as
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
    mkdir -p workspace flakegym
    cp -a ${workspace}/workspace/. workspace/
    ${builtins.concatStringsSep "\n" (map (d: "cp -a ${workspace}/${d} ${d}") workspace.imageDirs)}
    cp ${workspace}/snapshot.json flakegym/snapshot.json
    chmod -R u+w workspace flakegym ${toString workspace.imageDirs}
  '';
  extraEnv = workspace.imageEnv // {
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
    "org.flakegym.snapshot.deps" = workspace.kind;
  };
  extraPassthru = {
    snapshot = {
      inherit workspace keyFile;
      inherit (workspace) keyInputs;
    };
  };
}
