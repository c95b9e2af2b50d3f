# Python: the distributions pyproject.toml's `project.dependencies` and requirements.txt name, as
# a wheel set downloaded by pip in a fixed-output derivation whose hash is `wheelsHash` (a pin the
# caller passes; pin exact versions, or the set and its hash drift as indexes publish releases),
# then installed offline (`pip install --no-index`) into /python-deps, on PYTHONPATH in the image.
# A source that declares no dependencies needs none.
{
  pkgs,
  util,
  ...
}:
{
  spec,
  profile,
  pins,
  ...
}:
let
  pyproject = util.srcFile spec "pyproject.toml";
  requirements = util.srcFile spec "requirements.txt";
  declared =
    if builtins.pathExists pyproject then
      (builtins.fromTOML (builtins.readFile pyproject)).project.dependencies or [ ]
    else
      [ ];
  requirementLines = builtins.filter (l: builtins.match "[[:space:]]*(#.*)?" l == null) (
    if builtins.pathExists requirements then util.splitString "\n" (builtins.readFile requirements) else [ ]
  );
  # pip's arguments naming the whole set (the same for the download and the install).
  pipArgs = util.escapeShellArgs declared + (if requirementLines != [ ] then " -r requirements.txt" else "");
  wheelsHash = pins.wheelsHash or null;
  wheels = pkgs.stdenv.mkDerivation {
    name = "flakegym-snapshot-${spec.task}-wheels";
    inherit (spec) src;
    nativeBuildInputs = profile.packages;
    impureEnvVars = util.proxyEnvVars ++ [
      "PIP_INDEX_URL"
      "PIP_EXTRA_INDEX_URL"
    ];
    dontConfigure = true;
    buildPhase = ''
      runHook preBuild
      export HOME="$TMPDIR/home"
      python3 -m pip download --disable-pip-version-check --only-binary=:all: --dest "$TMPDIR/wheels" ${pipArgs}
      runHook postBuild
    '';
    installPhase = ''
      runHook preInstall
      cp -r "$TMPDIR/wheels" $out
      runHook postInstall
    '';
    dontFixup = true;
    outputHashMode = "recursive";
    outputHash = wheelsHash;
  };
  none = import ../snapshot-no-deps.nix;
in
if declared == [ ] && requirementLines == [ ] then
  none // { kind = "none"; }
else if wheelsHash == null then
  throw "lib.mkSnapshotImage ${spec.task}: the source declares Python dependencies (${builtins.toJSON (declared ++ requirementLines)}), so a python snapshot needs `wheelsHash` (the NAR hash of the downloaded wheel set: build once with wheelsHash = \"sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\" and use the hash Nix reports as `got:`)"
else
  none
  // {
    kind = "wheels";
    drvArgs = { inherit wheels; };
    setup = ''
      python3 -m pip install --disable-pip-version-check --no-index --find-links "$wheels" --target "$TMPDIR/python-deps" ${pipArgs}
      export PYTHONPATH="$TMPDIR/python-deps"
    '';
    install = ''
      cp -a "$TMPDIR/python-deps" $out/python-deps
    '';
    imageDirs = [ "python-deps" ];
    imageEnv = {
      PYTHONPATH = "/python-deps";
    };
    passthru = { inherit wheels; };
  }
