# Small pure helpers written on builtins only (no nixpkgs `lib`), so the flake's own logic
# evaluates on old Nix versions and against the test stub of nixpkgs (tests/nix/stub-nixpkgs).
rec {
  genAttrs =
    names: f:
    builtins.listToAttrs (
      map (name: {
        inherit name;
        value = f name;
      }) names
    );

  mapAttrsToList = f: attrs: map (name: f name attrs.${name}) (builtins.attrNames attrs);

  # Like mapAttrs, but `f name value` returns the new { name; value; } pair.
  mapAttrs' = f: attrs: builtins.listToAttrs (mapAttrsToList f attrs);

  # The proxy settings a fixed-output fetch passes through from the builder's environment (what
  # nixpkgs' fetchers call proxyImpureEnvVars); each fetch adds its own tool's variables.
  proxyEnvVars = [
    "http_proxy"
    "https_proxy"
    "HTTP_PROXY"
    "HTTPS_PROXY"
    "no_proxy"
    "NO_PROXY"
  ];

  # A file of a snapshot spec's source, read at evaluation: from `spec.readable` (the flake's own
  # copy of a catalog task's repository, a path: nothing is added to the store, so it reads the same
  # on a fresh store and under `flake check --no-build`) when the spec has one, else from `src`.
  srcFile = spec: name: if spec ? readable then spec.readable + "/${name}" else "${spec.src}/${name}";

  # Merges a list of attribute sets, later ones winning.
  mergeAttrsList = builtins.foldl' (acc: a: acc // a) { };

  hasPrefix = prefix: s: builtins.substring 0 (builtins.stringLength prefix) s == prefix;

  hasSuffix =
    suffix: s:
    let
      ls = builtins.stringLength s;
      lx = builtins.stringLength suffix;
    in
    ls >= lx && builtins.substring (ls - lx) lx s == suffix;

  removePrefix =
    prefix: s:
    if hasPrefix prefix s then
      builtins.substring (builtins.stringLength prefix) (builtins.stringLength s) s
    else
      s;

  removeSuffix =
    suffix: s:
    if hasSuffix suffix s then
      builtins.substring 0 (builtins.stringLength s - builtins.stringLength suffix) s
    else
      s;

  # "a/b/c" -> [ "a" "b" "c" ]
  splitString = sep: s: builtins.filter builtins.isString (builtins.split sep s);

  hasInfix = infix: s: builtins.length (splitString (escapeRegex infix) s) > 1;

  escapeRegex = builtins.replaceStrings [ "." "+" "*" "?" "(" ")" "[" "]" "{" "}" "|" "^" "$" "\\" ] [
    "\\."
    "\\+"
    "\\*"
    "\\?"
    "\\("
    "\\)"
    "\\["
    "\\]"
    "\\{"
    "\\}"
    "\\|"
    "\\^"
    "\\$"
    "\\\\"
  ];

  last = xs: builtins.elemAt xs (builtins.length xs - 1);

  concatLines = lines: builtins.concatStringsSep "\n" lines + "\n";

  escapeShellArg = s: "'" + builtins.replaceStrings [ "'" ] [ "'\\''" ] (toString s) + "'";

  escapeShellArgs = args: builtins.concatStringsSep " " (map escapeShellArg args);

  makeBinPath = pkgs: builtins.concatStringsSep ":" (map (p: "${p}/bin") pkgs);

  # Elements of `a` that are not in `b`.
  subtractLists = b: a: builtins.filter (x: !(builtins.elem x b)) a;

  # A store path name may hold [A-Za-z0-9+._?=-] only: "@scope/name" becomes "scope+name".
  storeName = s: builtins.replaceStrings [ "@" "/" ] [ "" "+" ] s;

  # npm's names for a Nix system, used to honour the `os`/`cpu`/`libc` fields of lock entries.
  npmPlatforms = {
    x86_64-linux = {
      os = "linux";
      cpu = "x64";
      libc = "glibc";
    };
    aarch64-linux = {
      os = "linux";
      cpu = "arm64";
      libc = "glibc";
    };
    x86_64-darwin = {
      os = "darwin";
      cpu = "x64";
      libc = null;
    };
    aarch64-darwin = {
      os = "darwin";
      cpu = "arm64";
      libc = null;
    };
  };

  npmPlatformFor =
    system:
    npmPlatforms.${system}
      or (throw "flakegym: no npm platform mapping for system '${system}' (known: ${builtins.concatStringsSep ", " (builtins.attrNames npmPlatforms)})");
}
