# Node: node_modules from the source's package-lock.json, dev dependencies included (tests need
# them), every entry fetched by name as its own fixed-output derivation whose hash is the entry's
# integrity (nix/npm-lock-modules.nix: hash-free, works for locks without `resolved` URLs, which
# importNpmLock needs). Install scripts are not run. A package.json with no dependencies needs no
# lock. node_modules is linked into the work tree (excluded from git).
{ nodeModulesFor, util, ... }:
{
  spec,
  system,
  ...
}:
let
  lockFile = util.srcFile spec "package-lock.json";
  manifestFile = util.srcFile spec "package.json";
  manifest =
    if builtins.pathExists manifestFile then
      builtins.fromJSON (builtins.readFile manifestFile)
    else
      throw "lib.mkSnapshotImage ${spec.task}: profile 'node' but the source has no package.json at its root";
  depCount = builtins.foldl' (
    n: field: n + builtins.length (builtins.attrNames (manifest.${field} or { }))
  ) 0 [
    "dependencies"
    "devDependencies"
    "optionalDependencies"
  ];
  nodeModules = nodeModulesFor {
    name = "flakegym-snapshot-${spec.task}";
    inherit lockFile system;
    includeDev = true;
  };
  none = import ../snapshot-no-deps.nix;
in
if builtins.pathExists lockFile then
  none
  // {
    kind = "npm-lock";
    drvArgs = { inherit nodeModules; };
    setup = nodeModules.linkInto "$PWD";
    gitExclude = [ "/node_modules" ];
    passthru = { inherit nodeModules; };
  }
else if depCount == 0 then
  builtins.seq manifest (none // { kind = "none"; })
else
  throw "lib.mkSnapshotImage ${spec.task}: package.json declares ${toString depCount} dependencies but the source has no package-lock.json to pin them (run `npm install --package-lock-only` and commit the lock)"
