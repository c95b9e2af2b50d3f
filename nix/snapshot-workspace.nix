# A repository snapshot for any profile: the pinned source as a git work tree, its dependencies
# vendored offline by the profile's nix/snapshot-deps/<profile>.nix (Rust: Cargo.lock; Go:
# `go mod vendor` by vendorHash; Node: package-lock.json by integrity; Python: a wheel set by
# wheelsHash; C: nothing) and the spec's install commands run in the build, so what they produce
# (Rust's target/) is in the image and a worker's first build is incremental.
#
# $out/snapshot.json holds the snapshot key computed as the runner computes its own
# (snapshot-key.mjs), with the toolchain identity measured here, by the same commands.
{
  pkgs,
  util,
  nodejs,
  nodeModulesFor,
}:
{
  spec,
  profile,
  system,
  pins ? { },
}:
let
  # packages/runner/src/snapshots/key.ts SNAPSHOT_FORMAT: bump both together.
  snapshotFormat = 1;
  depsFile = ./snapshot-deps + "/${spec.profile}.nix";
  deps =
    if builtins.pathExists depsFile then
      import depsFile { inherit pkgs util nodeModulesFor; } {
        inherit
          spec
          profile
          system
          pins
          ;
      }
    else
      throw "lib.mkSnapshotImage ${spec.task}: profile '${spec.profile}' has no snapshot builder (nix/snapshot-deps/${spec.profile}.nix)";
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
  pkgs.stdenv.mkDerivation (
    deps.drvArgs
    // {
      name = "flakegym-snapshot-${spec.task}-workspace";
      inherit (spec) src;
      inherit keySpec;
      passAsFile = deps.passAsFile ++ [ "keySpec" ];

      nativeBuildInputs = profile.packages ++ [ nodejs ];
      dontConfigure = true;
      # What the install commands wrote must stay byte-for-byte: no stripping or patching.
      dontFixup = true;

      buildPhase = ''
        runHook preBuild
        export HOME="$TMPDIR/home"
        mkdir -p "$HOME"
        ${util.concatLines (map (k: "export ${k}=${util.escapeShellArg profile.env.${k}}") (builtins.attrNames profile.env))}
        ${deps.setup}

        # The worker diffs against this commit: the snapshot is a git work tree of the pinned source.
        export GIT_AUTHOR_DATE="1970-01-01T00:00:01Z" GIT_COMMITTER_DATE="1970-01-01T00:00:01Z"
        git init --quiet --initial-branch=main
        ${util.concatLines (map (p: "echo ${util.escapeShellArg p} >> .git/info/exclude") deps.gitExclude)}
        git add --all
        git -c user.name=flakegym -c user.email=flakegym@localhost \
          commit --quiet --no-gpg-sign --allow-empty -m "${spec.repo} @ ${spec.commit}"

        ${util.concatLines (map (cmd: "echo + ${util.escapeShellArg cmd}\n${cmd}") spec.install)}
        ${deps.afterInstall or ""}

        # The index git add wrote holds each file's ctime, mtime, device and inode: rewritten from
        # HEAD it holds none (git refreshes it on first use), so two builds give the same bytes.
        rm -f .git/index
        git read-tree HEAD

        node ${./snapshot-key.mjs} "$keySpecPath" > "$TMPDIR/snapshot.json"
        cat "$TMPDIR/snapshot.json"
        runHook postBuild
      '';

      installPhase = ''
        runHook preInstall
        mkdir -p $out
        cp -a . $out/workspace
        ${deps.install}
        install -Dm644 "$TMPDIR/snapshot.json" $out/snapshot.json
        runHook postInstall
      '';

      passthru = deps.passthru // {
        inherit spec snapshotFormat;
        inherit (deps) imageDirs imageEnv kind;
        keyInputs = builtins.fromJSON keySpec;
      };
    }
  )
