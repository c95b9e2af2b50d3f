# rustPlatform.importCargoLock of the stand-in nixpkgs: the vendor directory for a Cargo.lock, as
# nixpkgs' (one directory per crate, `.cargo-checksum.json` with the lock's checksum).
#   - a lock whose every package is local (no `source`) vendors nothing (an empty directory);
#   - registry crates are fetched by cargo itself (`cargo fetch --locked` over the lock's own
#     workspace, the directory the lock is in), so no registry host is written here, in ONE
#     fixed-output derivation: the `.crate` files, each checked against the lock's checksum. Its
#     hash is recorded per lock in ./cargo-crates.json (key: sha256 of the lock's text); a lock
#     not recorded there builds with a placeholder hash and fails printing the one to record;
#   - git crates fail naming them (nixpkgs' outputHashes are not emulated here).
{
  mkDrv,
  cargo,
  rustc,
}:
args:
let
  lockFile = args.lockFile or null;
  lockText = if lockFile != null then builtins.readFile lockFile else args.lockFileContents;
  parsed = builtins.fromTOML lockText;
  sourced = builtins.filter (p: p ? source) (parsed.package or [ ]);
  isRegistry = p: builtins.substring 0 9 p.source == "registry+";
  registry = builtins.filter isRegistry sourced;
  git = builtins.filter (p: !(isRegistry p)) sourced;
  lockHash = builtins.hashString "sha256" lockText;
  recorded = (builtins.fromJSON (builtins.readFile ./cargo-crates.json)).${lockHash} or null;
  placeholder = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
  # one line per crate: `<name> <version> <checksum>`, each ending in a newline (`read` drops an
  # unterminated last line)
  crateList = builtins.concatStringsSep "" (
    map (p: "${p.name} ${p.version} ${p.checksum or "-"}\n") registry
  );
  emptyVendor = ''
    mkdir -p $out
    printf '[source.crates-io]\nreplace-with = "vendored-sources"\n[source.vendored-sources]\ndirectory = "%s"\n' $out > $out/.cargo-config
  '';

  crates = mkDrv {
    name = "cargo-crates";
    src = builtins.dirOf lockFile;
    inherit crateList lockHash;
    passAsFile = [ "crateList" ];
    nativeBuildInputs = [
      cargo
      rustc
    ];
    outputHashMode = "recursive";
    outputHashAlgo = "sha256";
    outputHash = if recorded != null then recorded.hash else placeholder;
    impureEnvVars = [
      "http_proxy"
      "https_proxy"
      "HTTP_PROXY"
      "HTTPS_PROXY"
      "no_proxy"
    ];
    buildCommand = builtins.readFile ./fetch-crates.sh;
  };
in
if lockFile == null && registry != [ ] then
  throw "stand-in importCargoLock: registry crates need lockFile (the lock inside its workspace), not lockFileContents"
else if git != [ ] then
  throw "stand-in importCargoLock: git crates (${
    builtins.concatStringsSep ", " (map (p: "${p.name}@${p.version}") git)
  }) are not vendored by the stand-in"
else
  mkDrv {
    name = "cargo-vendor-dir";
    inherit crateList;
    passAsFile = [ "crateList" ];
    buildCommand =
      if registry == [ ] then
        emptyVendor
      else
        ''
          ${emptyVendor}
          while read -r name version sum; do
            tar -xzf ${crates}/$name-$version.crate -C $out
            printf '{"files":{},"package":"%s"}' "$sum" > "$out/$name-$version/.cargo-checksum.json"
          done < "$crateListPath"
        '';
    passthru = {
      inherit crates;
    };
  }
