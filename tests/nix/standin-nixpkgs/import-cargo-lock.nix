# rustPlatform.importCargoLock of the stand-in nixpkgs: the vendor directory for a Cargo.lock.
# Crates cannot be fetched on this machine kind, so only a lock whose every package is local (no
# `source`) vendors here (an empty directory); one with registry or git crates fails naming them.
{ mkDrv }:
args:
let
  lockFile = args.lockFile or null;
  lockFileContents = args.lockFileContents or null;
  parsed = builtins.fromTOML (if lockFile != null then builtins.readFile lockFile else lockFileContents);
  deps = builtins.filter (p: p ? source) (parsed.package or [ ]);
in
mkDrv {
  name = "cargo-vendor-dir";
  depNames = map (p: "${p.name}@${p.version}") deps;
  buildCommand =
    if deps == [ ] then
      ''
        mkdir -p $out
        printf '[source.crates-io]\nreplace-with = "vendored-sources"\n[source.vendored-sources]\ndirectory = "%s"\n' $out > $out/.cargo-config
      ''
    else
      ''
        echo "stand-in importCargoLock: $name needs crates ($depNames) that cannot be fetched on this machine; only locks without dependencies vendor here (docs/reference/nix.md)" >&2
        exit 1
      '';
}
