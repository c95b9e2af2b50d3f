# Check: a profile's toolchain answers its smoke commands: profiles.json `smoke` (the commands
# the runner also uses) and the profile file's `toolSmoke` (one per tool the file promises).
{ pkgs, util }:
profile:
let
  commands = profile.smoke ++ profile.toolSmoke;
in
pkgs.runCommand "flakegym-smoke-${profile.nixName}" { nativeBuildInputs = [ profile.toolchain ]; } ''
  export HOME="$TMPDIR/home"
  mkdir -p "$HOME"
  cd "$TMPDIR"
  ${util.concatLines (
    map (cmd: ''
      echo + ${util.escapeShellArg cmd}
      ${pkgs.bashInteractive}/bin/bash -euo pipefail -c ${util.escapeShellArg cmd}
    '') commands
  )}
  echo "${profile.nixName}: ${toString (builtins.length commands)} smoke commands passed"
  touch $out
''
