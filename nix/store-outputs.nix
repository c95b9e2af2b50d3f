# What a Nix run's workers run on, for the `rollout` app (FLAKEGYM_NIX_OUTPUTS, read by
# packages/runner/src/nix/store-outputs.ts): each profile's toolchain and each task's snapshot work
# tree as store paths. Their string context is dropped, so the app neither depends on nor builds
# them: the runner realises (`nix-store --realise <drv>`) only what its tasks need, binds their
# closure read-only into its sandboxes and names them in run.json. A snapshot that fails to
# evaluate (e.g. a pinned source this machine cannot fetch) is left out; the runner then builds
# that task's snapshot itself and says so.
{
  profiles,
  snapshots,
  # true when nixpkgs is the stand-in (tests/nix/standin-nixpkgs): its packages are copies of the
  # build machine's tools, and a run says so
  standin,
}:
let
  pathsOf = drv: {
    drv = builtins.unsafeDiscardStringContext drv.drvPath;
    out = builtins.unsafeDiscardStringContext drv.outPath;
  };
  tried = x: builtins.tryEval (builtins.deepSeq x x);
  snapshotOf =
    task: s:
    let
      w = s.snapshot.workspace;
    in
    tried (
      pathsOf w
      // {
        # dirs beside the work tree (cargo-home, python-deps): the image's dependency environment
        imageDirs = w.imageDirs or [ ];
      }
    );
  evaluated = builtins.mapAttrs snapshotOf snapshots;
in
builtins.toJSON {
  schemaVersion = 1;
  nixpkgs = if standin then "standin" else "nixpkgs";
  profiles = builtins.mapAttrs (_: p: pathsOf p.toolchain) profiles;
  snapshots = builtins.mapAttrs (_: r: r.value) (
    builtins.removeAttrs evaluated (
      builtins.filter (t: !evaluated.${t}.success) (builtins.attrNames evaluated)
    )
  );
}
