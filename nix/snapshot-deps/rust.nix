# Rust: every crate of the source's own Cargo.lock vendored with rustPlatform.importCargoLock
# (hashes from the lock's checksums, none written by hand); CARGO_HOME holds the source
# replacement. Vendored crates stay at their store path, which the image carries unchanged, so the
# fingerprints cargo writes in the build stay valid in the image (target/ is reused).
{ pkgs, util, ... }:
{ spec, ... }:
let
  cargoDeps = pkgs.rustPlatform.importCargoLock { lockFile = util.srcFile spec "Cargo.lock"; };
  cargoConfig = ''
    [source.crates-io]
    replace-with = "vendored-sources"

    [source.vendored-sources]
    directory = "${cargoDeps}"

    [net]
    offline = true
  '';
in
if !(builtins.pathExists (util.srcFile spec "Cargo.lock")) then
  throw "lib.mkSnapshotImage ${spec.task}: profile 'rust' but the source has no Cargo.lock at its root (run `cargo generate-lockfile` and commit it)"
else
{
  kind = "cargo-lock";
  drvArgs = { inherit cargoDeps cargoConfig; };
  passAsFile = [ "cargoConfig" ];
  # CARGO_INCREMENTAL=0: no incremental session dirs (timestamped, never reproducible) in target/.
  setup = ''
    export CARGO_INCREMENTAL=0
    export CARGO_HOME="$TMPDIR/cargo-home"
    mkdir -p "$CARGO_HOME"
    cp "$cargoConfigPath" "$CARGO_HOME/config.toml"
  '';
  # cargo's cache of rustc's answers (target/.rustc_info.json) is a hash map written in random
  # order, so two builds differ there: dropped. cargo asks rustc again on the next build (a few ms;
  # no fingerprint depends on the file), so target/ stays fresh.
  afterInstall = ''
    find . -name .rustc_info.json -type f -delete
  '';
  gitExclude = [ "/target" ];
  install = ''
    install -Dm644 "$cargoConfigPath" $out/cargo-home/config.toml
  '';
  imageDirs = [ "cargo-home" ];
  imageEnv = {
    CARGO_HOME = "/cargo-home";
    CARGO_INCREMENTAL = "0";
  };
  passthru = { inherit cargoDeps; };
}
