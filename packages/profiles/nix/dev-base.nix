# Profile `dev-base` (profiles.json): what every profile starts from. nix/profiles.nix puts these
# packages first in every other profile, so a tool listed here is in every image and devShell.
pkgs: {
  packages = [
    pkgs.bashInteractive
    pkgs.coreutils
    pkgs.findutils
    pkgs.diffutils
    pkgs.gnugrep
    pkgs.gnused
    pkgs.gawk
    pkgs.gnupatch
    pkgs.gnutar
    pkgs.gzip
    pkgs.xz
    pkgs.which
    pkgs.less
    pkgs.procps
    pkgs.file
    pkgs.git
    pkgs.ripgrep
    pkgs.jq
    pkgs.cacert
  ];
  # Nix-only smoke commands (beyond profiles.json `smoke`): every tool this file promises answers.
  toolSmoke = [
    "bash --version"
    "rg --version"
    "jq --version"
    "patch --version"
    # the runner's scoring script (packages/runner/src/scoring/script.ts) runs these in every worker
    "base64 --version"
    "sha256sum --version"
    "timeout --version"
  ];
  env = { };
}
