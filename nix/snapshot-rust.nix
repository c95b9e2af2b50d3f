# A Rust repository snapshot: the pinned source as a git work tree, every crate of its Cargo.lock
# vendored with rustPlatform.importCargoLock (hashes from the lock's checksums, none written by
# hand) and `target/` pre-built by the spec's install commands, so a worker's first `cargo test`
# is incremental. Vendored crates stay at their store path, which the image carries unchanged, so
# the fingerprints cargo wrote here stay valid there.
#
# $out/snapshot.json holds the snapshot key computed as the runner computes its own
# (snapshot-key.mjs), with the toolchain identity measured here, by the same commands.
{
  pkgs,
  util,
  nodejs,
}:
{ spec, profile }:
let
  # packages/runner/src/snapshots/key.ts SNAPSHOT_FORMAT: bump both together.
  snapshotFormat = 1;
  cargoDeps = pkgs.rustPlatform.importCargoLock { lockFile = "${spec.src}/Cargo.lock"; };
  cargoConfig = ''
    [source.crates-io]
    replace-with = "vendored-sources"

    [source.vendored-sources]
    directory = "${cargoDeps}"

    [net]
    offline = true
  '';
  keySpec = builtins.toJSON {
    inherit (spec)
      task
      repo
      commit
      profile
      install
      smoke
      network
      ;
    format = snapshotFormat;
    toolchainCommands = profile.smoke;
  };
  rev = spec.src.rev or null;
in
if rev != null && rev != spec.commit then
  throw "flakegym: snapshot ${spec.task}: flake.lock pins ${spec.repo} at ${rev} but nix/snapshots/${spec.task}.nix says ${spec.commit}; update both together"
else
  pkgs.stdenv.mkDerivation {
    name = "flakegym-snapshot-${spec.task}-workspace";
    inherit (spec) src;
    inherit cargoDeps cargoConfig keySpec;
    passAsFile = [
      "cargoConfig"
      "keySpec"
    ];

    nativeBuildInputs = profile.packages ++ [ nodejs ];
    dontConfigure = true;
    # target/ must stay byte-for-byte what cargo wrote: no stripping or patching.
    dontFixup = true;

    buildPhase = ''
      runHook preBuild
      export HOME="$TMPDIR/home" CARGO_HOME="$TMPDIR/cargo-home"
      mkdir -p "$HOME" "$CARGO_HOME"
      cp "$cargoConfigPath" "$CARGO_HOME/config.toml"

      # The worker diffs against this commit: the snapshot is a git work tree of the pinned source.
      export GIT_AUTHOR_DATE="1970-01-01T00:00:01Z" GIT_COMMITTER_DATE="1970-01-01T00:00:01Z"
      git init --quiet --initial-branch=main
      echo /target >> .git/info/exclude
      git add --all
      git -c user.name=flakegym -c user.email=flakegym@localhost \
        commit --quiet --no-gpg-sign -m "${spec.repo} @ ${spec.commit}"

      ${util.concatLines (map (cmd: "echo + ${util.escapeShellArg cmd}\n${cmd}") spec.install)}

      node ${./snapshot-key.mjs} "$keySpecPath" > "$TMPDIR/snapshot.json"
      cat "$TMPDIR/snapshot.json"
      runHook postBuild
    '';

    installPhase = ''
      runHook preInstall
      mkdir -p $out
      cp -a . $out/workspace
      install -Dm644 "$cargoConfigPath" $out/cargo-home/config.toml
      install -Dm644 "$TMPDIR/snapshot.json" $out/snapshot.json
      runHook postInstall
    '';

    passthru = {
      inherit cargoDeps spec snapshotFormat;
      keyInputs = builtins.fromJSON keySpec;
    };
  }
