# The Cline core, npm `cline@1.0.10`, vendored: fetched by package name in a fixed-output derivation
# whose hash is its npm integrity, with the bundled better-sqlite3 rebuilt offline by node-gyp
# against nixpkgs' Node headers, ripgrep from nixpkgs placed where the core expects `rg`, and the
# Go host bridge's ELF interpreter pointed at Nix's glibc loader. Outputs:
#   lib/cline/          the installed npm package (what node_modules/cline points at)
#   bin/cline-core      node + cline-core.js with NODE_PATH holding node_modules and fake_node_modules
#   bin/cline-host      the host-bridge gRPC server
{
  pkgs,
  npmPack,
  nodejs,
}:
let
  version = "1.0.10";
  integrity = "sha512-Ofj9n3ry3RZ/q6GtZs6eqqMJIGqnRWGm/lAxN6VuOC66erV1qzpxTzZw+acMNXJjIjRAbkq5UIP5IqtOPex5aQ==";
  system = pkgs.stdenv.hostPlatform.system;
  # The package ships its Go binaries per platform; the suffix its postinstall would pick.
  platform =
    {
      x86_64-linux = "linux-amd64";
      aarch64-linux = "linux-arm64";
    }
    .${system} or (throw "flakegym: cline@${version} ships cline-host for linux-amd64 and linux-arm64; no Cline core for ${system}");
  tarball = npmPack {
    name = "cline";
    inherit version integrity;
  };
in
pkgs.stdenv.mkDerivation {
  pname = "cline-core";
  inherit version;
  src = tarball;

  nativeBuildInputs = [
    nodejs
    pkgs.node-gyp
    pkgs.python3
    pkgs.makeWrapper
    pkgs.patchelf
  ];

  unpackPhase = ''
    runHook preUnpack
    mkdir source
    tar -xzf "$src" -C source --strip-components=1 --no-same-owner
    cd source
    runHook postUnpack
  '';

  dontConfigure = true;

  buildPhase = ''
    runHook preBuild
    export HOME="$TMPDIR"
    echo "rebuilding better-sqlite3 against ${nodejs.name} headers (offline)"
    (cd node_modules/better-sqlite3 && node-gyp rebuild --release --nodedir=${nodejs})
    node -e 'const db = require("./node_modules/better-sqlite3")(":memory:");
      if (db.prepare("select 41 + 1 as x").get().x !== 42) process.exit(1);'
    runHook postBuild
  '';

  installPhase = ''
    runHook preInstall
    pkg=$out/lib/cline
    mkdir -p $pkg/bin $out/bin
    cp -r package.json README.md cline-core.js proto fake_node_modules extension man node_modules $pkg/
    # Keep only the compiled addon of the native build.
    find $pkg/node_modules/better-sqlite3/build -mindepth 1 -maxdepth 1 ! -name Release -exec rm -rf {} +
    find $pkg/node_modules/better-sqlite3/build/Release -mindepth 1 -maxdepth 1 ! -name '*.node' -exec rm -rf {} +
    rm -rf $pkg/node_modules/better-sqlite3/deps $pkg/node_modules/better-sqlite3/src
    install -m755 bin/cline-host-${platform} $pkg/bin/cline-host-${platform}
    # A Go binary needing only libc, linked for an FHS loader: point it at Nix's.
    patchelf --set-interpreter "$(cat $NIX_CC/nix-support/dynamic-linker)" $pkg/bin/cline-host-${platform}
    ln -s cline-host-${platform} $pkg/bin/cline-host
    ln -s ${pkgs.ripgrep}/bin/rg $pkg/rg
    makeWrapper ${nodejs}/bin/node $out/bin/cline-core \
      --add-flags $pkg/cline-core.js \
      --set NODE_PATH "$pkg/node_modules:$pkg/fake_node_modules"
    ln -s ../lib/cline/bin/cline-host $out/bin/cline-host
    runHook postInstall
  '';

  passthru = {
    inherit version integrity tarball;
    # Where the npm package lives inside the output (node_modules/cline links here).
    packageDir = "lib/cline";
  };

  meta = {
    description = "Cline core ${version} (npm cline), vendored for flakegym workers";
    platforms = [
      "x86_64-linux"
      "aarch64-linux"
    ];
    mainProgram = "cline-core";
  };
}
