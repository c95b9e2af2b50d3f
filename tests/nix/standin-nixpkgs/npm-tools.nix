# The node profile's npm-published tools (pnpm, yarn, typescript, eslint, prettier) for the
# stand-in nixpkgs: `npm ci` of npm-tools/package-lock.json (versions and integrity pinned there)
# in a fixed-output derivation (its hash: the tree npm writes), then one package per tool whose
# bin runs it with the stand-in's node.
{
  mkDrv,
  nodejs,
  cacert,
  bashInteractive,
}:
let
  modules = mkDrv {
    name = "standin-npm-tools-node-modules";
    src = ./npm-tools;
    nativeBuildInputs = [ nodejs ];
    SSL_CERT_FILE = "${cacert}/etc/ssl/certs/ca-bundle.crt";
    impureEnvVars = [
      "npm_config_registry"
      "http_proxy"
      "https_proxy"
    ];
    outputHashMode = "recursive";
    outputHashAlgo = "sha256";
    outputHash = "sha256-jSWzrrbG8/kFQHLvJqcl4Y9r6LMq5brkqn9O2VETC5I=";
    buildCommand = ''
      export HOME=$TMPDIR npm_config_cache=$TMPDIR/npm-cache npm_config_cafile=$SSL_CERT_FILE
      mkdir -p $out
      cp $src/package.json $src/package-lock.json $out/
      cd $out
      npm ci --ignore-scripts --no-audit --no-fund --loglevel=warn
      rm -f package.json package-lock.json node_modules/.package-lock.json
    '';
  };
  tool =
    pname: bins:
    mkDrv {
      inherit pname;
      version = "npm";
      buildCommand = ''
        mkdir -p $out/bin
        for b in ${builtins.concatStringsSep " " bins}; do
          printf '#!%s\nexec %s %s "$@"\n' ${bashInteractive}/bin/bash ${nodejs}/bin/node \
            "$(readlink -f ${modules}/node_modules/.bin/$b)" > $out/bin/$b
          chmod +x $out/bin/$b
        done
      '';
    };
in
{
  pnpm = tool "pnpm" [ "pnpm" ];
  yarn = tool "yarn" [ "yarn" ];
  typescript = tool "typescript" [ "tsc" ];
  eslint = tool "eslint" [ "eslint" ];
  prettier = tool "prettier" [ "prettier" ];
}
