# The workspace sources Nix copies into the store, filtered so node_modules, build output, VCS
# data and files unrelated to the runner never enter it (and never change its hash).
#   runtime: what `flakegym` needs to run (manifests, lock, tsconfigs, packages/*/ sources).
#   tests:   runtime + test sources and the vitest config, for the runner's unit-test check.
{ util }:
{
  root,
  withTests ? false,
}:
let
  rootStr = toString root;
  topFiles = [
    "package.json"
    "package-lock.json"
    "tsconfig.base.json"
    "tsconfig.json"
  ]
  ++ (
    if withTests then
      [
        "vitest.config.ts"
        "biome.json"
        "nx.json"
      ]
    else
      [ ]
  );
  topDirs = [ "packages" ] ++ (if withTests then [ "tests" "scripts" ] else [ ]);
  # Never copied, at any depth.
  droppedNames = [
    "node_modules"
    "dist"
    ".nx"
    ".git"
    "result"
  ];
  filter =
    path: type:
    let
      rel = util.removePrefix "${rootStr}/" (toString path);
      parts = util.splitString "/" rel;
      top = builtins.head parts;
      base = util.last parts;
    in
    !(builtins.elem base droppedNames)
    && !(util.hasSuffix ".tsbuildinfo" base)
    && (
      if builtins.length parts == 1 then
        (type == "directory" && builtins.elem top topDirs) || (type != "directory" && builtins.elem top topFiles)
      else
        builtins.elem top topDirs
        # The profile Nix files belong to the flake, not to the runner's sources.
        && !(util.hasPrefix "packages/profiles/nix" rel)
        # A package's own unit tests (packages/<pkg>/test), not every dir named `test`: catalog
        # tasks' repositories keep theirs (packages/runner/catalog/<task>/repo/test).
        && (withTests || !(builtins.length parts >= 3 && builtins.elemAt parts 2 == "test"))
    );
in
builtins.path {
  name = if withTests then "flakegym-test-source" else "flakegym-source";
  path = root;
  inherit filter;
}
