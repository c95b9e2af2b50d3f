# One npm package tarball, fetched BY NAME in a fixed-output derivation whose hash is the npm
# integrity (sha512/sha1 SRI) recorded in package-lock.json. `npm pack name@version` asks npm's
# configured registry (set npm_config_registry in the Nix daemon's environment to use a mirror)
# and writes the published tarball byte for byte, so the integrity is its flat hash.
{
  pkgs,
  util,
  nodejs,
}:
{
  name,
  version,
  integrity,
}:
let
  # A lock entry may carry several space-separated hashes; prefer the strongest.
  hashes = util.splitString " " integrity;
  sha512 = builtins.filter (util.hasPrefix "sha512-") hashes;
  outputHash =
    if sha512 != [ ] then
      builtins.head sha512
    else if hashes != [ ] && builtins.head hashes != "" then
      builtins.head hashes
    else
      throw "flakegym: npm package ${name}@${version} has no integrity hash";
in
pkgs.stdenvNoCC.mkDerivation {
  name = "npm-${util.storeName name}-${version}.tgz";
  spec = "${name}@${version}";

  nativeBuildInputs = [
    nodejs
    pkgs.cacert
  ];
  SSL_CERT_FILE = "${pkgs.cacert}/etc/ssl/certs/ca-bundle.crt";
  impureEnvVars = util.proxyEnvVars ++ [
    "npm_config_registry"
    "NPM_CONFIG_REGISTRY"
  ];

  outputHashMode = "flat";
  inherit outputHash;

  buildCommand = ''
    export HOME="$TMPDIR" npm_config_cache="$TMPDIR/npm-cache"
    export npm_config_cafile="$SSL_CERT_FILE" npm_config_update_notifier=false
    export npm_config_audit=false npm_config_fund=false
    mkdir "$TMPDIR/pack"
    cd "$TMPDIR/pack"
    echo "npm pack $spec"
    npm pack "$spec" --ignore-scripts --loglevel=warn >/dev/null
    set -- ./*.tgz
    if [ "$#" -ne 1 ] || [ ! -f "$1" ]; then
      echo "npm pack $spec did not produce exactly one tarball: $*" >&2
      exit 1
    fi
    mv "$1" "$out"
  '';
}
