# Profile `rust` (profiles.json): stable Rust with cargo, clippy and rustfmt. gcc is the linker.
pkgs: {
  packages = [
    pkgs.rustc
    pkgs.cargo
    pkgs.clippy
    pkgs.rustfmt
    pkgs.gcc
    pkgs.pkg-config
  ];
  toolSmoke = [
    "cargo clippy --version"
    "rustfmt --version"
    "cc --version"
  ];
  env = { };
}
