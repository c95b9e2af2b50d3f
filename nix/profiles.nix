# The toolchain profiles: the set of ids, names and smoke commands comes from profiles.json (the
# single source TypeScript reads too); each id's Nix packages come from packages/profiles/nix/<id>.nix.
# A profile file missing for an id, or a file for no id, fails evaluation naming both.
{
  util,
  profilesJson,
  profileDir,
}:
let
  file = builtins.fromJSON (builtins.readFile profilesJson);
  ids = builtins.attrNames file.profiles;

  nixFiles = builtins.filter (n: util.hasSuffix ".nix" n) (
    builtins.attrNames (builtins.readDir profileDir)
  );
  fileIds = map (util.removeSuffix ".nix") nixFiles;
  missing = util.subtractLists fileIds ids;
  extra = util.subtractLists ids fileIds;

  checked =
    if missing != [ ] then
      throw "flakegym: profiles.json defines profile(s) ${builtins.toJSON missing} but packages/profiles/nix/ has no <id>.nix for them; add packages/profiles/nix/<id>.nix (a function `pkgs: { packages = [ ... ]; }`)"
    else if extra != [ ] then
      throw "flakegym: packages/profiles/nix/ has ${builtins.toJSON (map (i: "${i}.nix") extra)} but profiles.json defines no such profile id; add the id to packages/profiles/profiles.json or remove the file"
    else if !(builtins.elem "dev-base" ids) then
      throw "flakegym: profiles.json must define the `dev-base` profile every other profile starts from"
    else
      true;

  allowedKeys = [
    "packages"
    "toolSmoke"
    "env"
    "ignoreCollisions"
  ];

  # Imports packages/profiles/nix/<id>.nix for one package set and checks its shape.
  loadFile =
    pkgs: id:
    let
      path = "packages/profiles/nix/${id}.nix";
      def = import (profileDir + "/${id}.nix");
      value = if builtins.isFunction def then def pkgs else throw "flakegym: ${path} must be a function `pkgs: { packages = [ ... ]; }`";
      unknown = util.subtractLists allowedKeys (builtins.attrNames value);
    in
    if !(builtins.isAttrs value) then
      throw "flakegym: ${path} must return an attribute set"
    else if unknown != [ ] then
      throw "flakegym: ${path} has unknown attribute(s) ${builtins.toJSON unknown}; allowed: ${builtins.toJSON allowedKeys}"
    else if !(value ? packages && builtins.isList value.packages) then
      throw "flakegym: ${path} must set `packages` to a list of packages"
    else
      {
        inherit (value) packages;
        toolSmoke = value.toolSmoke or [ ];
        env = value.env or { };
        ignoreCollisions = value.ignoreCollisions or false;
      };
in
assert checked;
{
  inherit ids;
  inherit (file) fallback;

  # Per package set: id -> { id, nixName, description, smoke, toolSmoke, packages, env, toolchain }.
  # `packages` starts with dev-base's; `toolchain` is them joined into one tree (image contents).
  forPkgs =
    pkgs:
    let
      base = loadFile pkgs "dev-base";
    in
    util.genAttrs ids (
      id:
      let
        spec = file.profiles.${id};
        own = loadFile pkgs id;
        isBase = id == "dev-base";
        packages = if isBase then own.packages else base.packages ++ own.packages;
      in
      {
        inherit id packages;
        inherit (spec) nixName description smoke;
        toolSmoke = if isBase then own.toolSmoke else base.toolSmoke ++ own.toolSmoke;
        env = (if isBase then { } else base.env) // own.env // { FLAKEGYM_PROFILE = id; };
        toolchain = pkgs.buildEnv {
          name = "flakegym-${spec.nixName}-toolchain";
          paths = packages;
          inherit (own) ignoreCollisions;
        };
      }
    );
}
