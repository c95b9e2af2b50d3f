# node_modules for an npm workspace, built from package-lock.json with no aggregate hash to keep
# updated: every lock entry is its own fixed-output derivation (nix/npm-pack.nix, hash = the
# entry's integrity) and the tree is assembled offline. Entries for other platforms (`os`, `cpu`,
# `libc`) and everything under them are skipped; bundled entries come inside their parent's
# tarball; workspace links are made by `linkInto`. Install scripts are not run: a package that
# needs one gets an override (a prebuilt package directory, e.g. the Cline core).
{
  pkgs,
  util,
  npmPack,
}:
{
  name,
  lockFile,
  system,
  includeDev ? false,
  # lock key -> { version; dir; }: `dir` replaces the tarball of that entry (a symlink to it).
  overrides ? { },
}:
let
  lock = builtins.fromJSON (builtins.readFile lockFile);
  entries =
    if (lock.lockfileVersion or 1) >= 2 then
      lock.packages
    else
      throw "flakegym: ${name}: package-lock.json has lockfileVersion ${toString (lock.lockfileVersion or 1)}; run npm >= 7 to write lockfileVersion 3";
  platform = util.npmPlatformFor system;

  isModuleKey = key: util.hasPrefix "node_modules/" key || util.hasInfix "/node_modules/" key;

  # "node_modules/a/node_modules/@s/b" -> [ "node_modules/a" ] (the entries it is nested in)
  ancestorKeys =
    key:
    let
      parts = util.splitString "/node_modules/" key;
      n = builtins.length parts;
    in
    builtins.genList (
      i: builtins.concatStringsSep "/node_modules/" (builtins.genList (j: builtins.elemAt parts j) (i + 1))
    ) (n - 1);

  packageName =
    key: entry: entry.name or (util.last (util.splitString "node_modules/" key));

  # npm's `os`/`cpu`/`libc` lists: allowed values, or "!value" exclusions.
  fieldAllows =
    field: value: entry:
    if !(entry ? ${field}) || value == null then
      true
    else
      let
        list = entry.${field};
        excluded = builtins.filter (util.hasPrefix "!") list;
        allowed = util.subtractLists excluded list;
      in
      (allowed == [ ] || builtins.elem value allowed) && !(builtins.elem "!${value}" excluded);

  forPlatform =
    entry:
    fieldAllows "os" platform.os entry
    && fieldAllows "cpu" platform.cpu entry
    && fieldAllows "libc" platform.libc entry;

  selfWanted =
    key: entry:
    isModuleKey key
    && !(entry.link or false)
    && !(entry.inBundle or false)
    && (includeDev || !(entry.dev or false))
    && forPlatform entry;

  wanted =
    key:
    selfWanted key entries.${key}
    && builtins.all (a: entries ? ${a} && selfWanted a entries.${a}) (ancestorKeys key);

  keys = builtins.sort builtins.lessThan (builtins.filter wanted (builtins.attrNames entries));

  fetchEntry =
    key:
    let
      entry = entries.${key};
      pname = packageName key entry;
    in
    if entry ? resolved && !(entry ? integrity) then
      throw "flakegym: ${name}: package-lock.json entry '${key}' resolves to '${entry.resolved}' without an integrity hash; only registry packages with integrity can be fetched"
    else if !(entry ? integrity) then
      throw "flakegym: ${name}: package-lock.json entry '${key}' (${pname}) has no integrity hash; run `npm install` to refresh the lock"
    else
      npmPack {
        name = pname;
        inherit (entry) version integrity;
      };

  installLine =
    key:
    let
      entry = entries.${key};
      override = overrides.${key};
    in
    if overrides ? ${key} then
      if override.version != entry.version then
        throw "flakegym: ${name}: package-lock.json pins '${key}' at ${entry.version} but its Nix override builds ${override.version}; update both together"
      else
        "link_dir ${util.escapeShellArg key} ${override.dir}"
    else
      "unpack ${util.escapeShellArg key} ${fetchEntry key}";

  # Overridden entries are prebuilt directories: nothing may be installed inside them.
  insideOverride = builtins.filter (
    key: builtins.any (o: util.hasPrefix "${o}/node_modules/" key) (builtins.attrNames overrides)
  ) keys;

  topLevel = key: util.hasPrefix "node_modules/" key && !(util.hasInfix "/node_modules/" key);
  binLines = builtins.concatLists (
    map (
      key:
      let
        entry = entries.${key};
        pkgDir = util.removePrefix "node_modules/" key;
        bins =
          if !(entry ? bin) then
            { }
          else if builtins.isString entry.bin then
            { ${util.last (util.splitString "/" pkgDir)} = entry.bin; }
          else
            entry.bin;
      in
      util.mapAttrsToList (
        bin: target: "bin_link ${util.escapeShellArg bin} ${util.escapeShellArg "${pkgDir}/${util.removePrefix "./" target}"}"
      ) bins
    ) (builtins.filter topLevel keys)
  );

  # Workspace packages: node_modules/<name> -> <workspace dir>, relative to the link's directory.
  workspaceLinks = builtins.filter (key: entries.${key}.link or false) (builtins.attrNames entries);
  relativeLink =
    key:
    let
      depth = builtins.length (util.splitString "/" key) - 1;
      up = builtins.concatStringsSep "" (builtins.genList (_: "../") depth);
    in
    "${up}${entries.${key}.resolved}";

  # Dirs like packages/x/node_modules that hold entries npm did not hoist.
  nestedRoots = builtins.filter (r: r != "") (
    map (
      key: if util.hasPrefix "node_modules/" key then "" else builtins.head (util.splitString "/node_modules/" key)
    ) keys
  );

  tree =
    if insideOverride != [ ] then
      throw "flakegym: ${name}: lock entries ${builtins.toJSON insideOverride} are nested inside an overridden package; bundle them or drop the override"
    else
      pkgs.runCommand "${name}-node-modules"
        {
          passAsFile = [ "installScript" ];
          installScript = util.concatLines (map installLine keys ++ binLines);
          passthru = {
            inherit keys lockFile;
            packageCount = builtins.length keys;
            # lock key -> its fixed-output tarball (entries without an override).
            fetched = builtins.listToAttrs (
              map (key: {
                name = key;
                value = fetchEntry key;
              }) (builtins.filter (key: !(overrides ? ${key})) keys)
            );
            # Shell commands that give the workspace at `root` its node_modules from this tree.
            linkInto = root: ''
              mkdir -p ${root}/node_modules
              for e in ${tree}/node_modules/* ${tree}/node_modules/.bin; do
                [ -e "$e" ] || continue
                n=$(basename "$e")
                case "$n" in
                  @*) mkdir -p "${root}/node_modules/$n"
                      for s in "$e"/*; do ln -s "$s" "${root}/node_modules/$n/"; done ;;
                  *) ln -s "$e" "${root}/node_modules/$n" ;;
                esac
              done
              ${util.concatLines (
                # Only workspaces present in `root` (a filtered source may leave some out):
                # nixpkgs' fixup refuses dangling symlinks.
                map (key: ''
                  if [ -e ${root}/${entries.${key}.resolved} ]; then
                    mkdir -p "$(dirname ${root}/${key})"
                    ln -sfn ${util.escapeShellArg (relativeLink key)} ${root}/${key}
                  fi
                '') workspaceLinks
              )}
              ${util.concatLines (map (r: "ln -sfn ${tree}/${r}/node_modules ${root}/${r}/node_modules") nestedRoots)}
            '';
          };
        }
        ''
          unpack() {
            mkdir -p "$out/$1"
            tar -xzf "$2" -C "$out/$1" --strip-components=1 --no-same-owner --no-same-permissions
          }
          link_dir() {
            mkdir -p "$(dirname "$out/$1")"
            ln -s "$2" "$out/$1"
          }
          bin_link() {
            mkdir -p "$out/node_modules/.bin"
            if [ -e "$out/node_modules/$2" ]; then
              chmod +x "$out/node_modules/$2" 2>/dev/null || true
              ln -sfn "../$2" "$out/node_modules/.bin/$1"
            fi
          }
          mkdir -p "$out/node_modules"
          . "$installScriptPath"
          chmod -R u+w,a+rX "$out"
          echo "installed $(grep -c '^unpack\|^link_dir' "$installScriptPath") packages into $out"
        '';
in
tree
