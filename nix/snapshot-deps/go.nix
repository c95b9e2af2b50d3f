# Go: the modules go.mod requires, vendored by `go mod vendor` in a fixed-output derivation whose
# hash is `vendorHash` (what buildGoModule's goModules does; Go's vendor hash cannot be derived
# from go.sum, so it is a pin the caller passes: build once with a fake hash, take the `got:` one).
# A module that requires nothing, or a source with its own vendor/, needs none. The vendor/ tree is
# copied into the work tree (excluded from git), where the profile's GOFLAGS=-mod=vendor finds it.
{
  pkgs,
  util,
  ...
}:
{
  spec,
  pins,
  ...
}:
let
  goMod = util.srcFile spec "go.mod";
  hasGoMod = builtins.pathExists goMod;
  requires =
    hasGoMod
    && builtins.any (l: builtins.match "[[:space:]]*require([[:space:](].*)?" l != null) (
      util.splitString "\n" (builtins.readFile goMod)
    );
  ownVendor = builtins.pathExists (util.srcFile spec "vendor/modules.txt");
  vendorHash = pins.vendorHash or null;
  goModules = pkgs.stdenv.mkDerivation {
    name = "flakegym-snapshot-${spec.task}-go-modules";
    inherit (spec) src;
    nativeBuildInputs = [
      pkgs.go
      pkgs.git
      pkgs.cacert
    ];
    GOTOOLCHAIN = "local";
    GOFLAGS = "-mod=mod";
    impureEnvVars = util.proxyEnvVars ++ [
      "GOPROXY"
      "GOSUMDB"
      "GOPRIVATE"
    ];
    dontConfigure = true;
    buildPhase = ''
      runHook preBuild
      export GOCACHE="$TMPDIR/go-cache" GOPATH="$TMPDIR/go"
      go mod vendor
      runHook postBuild
    '';
    installPhase = ''
      runHook preInstall
      cp -r vendor $out
      runHook postInstall
    '';
    dontFixup = true;
    outputHashMode = "recursive";
    outputHash = vendorHash;
  };
  none = import ../snapshot-no-deps.nix;
in
if !hasGoMod then
  throw "lib.mkSnapshotImage ${spec.task}: profile 'go' but the source has no go.mod at its root"
else if ownVendor then
  none // { kind = "source-vendor"; }
else if !requires then
  none // { kind = "none"; }
else if vendorHash == null then
  throw "lib.mkSnapshotImage ${spec.task}: go.mod requires modules, so a go snapshot needs `vendorHash` (the NAR hash of `go mod vendor`'s output: build once with vendorHash = \"sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\" and use the hash Nix reports as `got:`)"
else
  none
  // {
    kind = "go-mod-vendor";
    drvArgs = { inherit goModules; };
    setup = ''
      rm -rf vendor
      cp -r --no-preserve=mode "$goModules" vendor
    '';
    gitExclude = [ "/vendor" ];
    passthru = { inherit goModules; };
  }
