# The flakegym runner (the `flakegym` CLI) from the npm workspace: the filtered sources plus a
# node_modules assembled from package-lock.json (nix/npm-lock-modules.nix) whose `cline` entry is
# the vendored Cline core. Sources run through tsx, as in a checkout.
{
  pkgs,
  util,
  nodejs,
  src,
  # The workspace's package.json (read from the flake, not from `src`: that copy may not exist
  # while evaluating read-only, e.g. `nix flake check --no-build`).
  manifest,
  nodeModules,
}:
let
  # Tools the local backend runs; a host install of the same name wins (suffix, not prefix).
  hostTools = [ pkgs.git ] ++ (if pkgs.stdenv.hostPlatform.isLinux then [ pkgs.bubblewrap ] else [ ]);
in
pkgs.stdenvNoCC.mkDerivation {
  pname = "flakegym";
  version = (builtins.fromJSON (builtins.readFile manifest)).version;
  inherit src;

  # nodejs: patchShebangs points `#!/usr/bin/env node` scripts at it.
  nativeBuildInputs = [
    pkgs.makeWrapper
    nodejs
  ];
  dontConfigure = true;
  dontBuild = true;

  installPhase = ''
    runHook preInstall
    app=$out/lib/flakegym
    mkdir -p $app $out/bin
    cp -r . $app/
    chmod -R u+w $app
    ${nodeModules.linkInto "$app"}
    makeWrapper ${nodejs}/bin/node $out/bin/flakegym \
      --add-flags $app/packages/runner/bin/flakegym.js \
      --suffix PATH : ${util.makeBinPath hostTools}
    runHook postInstall
  '';

  # The runner's own entry must be there: a moved bin would otherwise only fail at run time.
  doInstallCheck = true;
  installCheckPhase = ''
    test -f $out/lib/flakegym/packages/runner/bin/flakegym.js
    test -e $out/lib/flakegym/node_modules/tsx/package.json
    HOME=$TMPDIR $out/bin/flakegym --version
  '';

  passthru = {
    inherit nodeModules;
  };

  meta = {
    description = "flakegym: scored, token-faithful Cline rollouts in isolated, reproducible sandboxes";
    mainProgram = "flakegym";
  };
}
