# The stand-in nixpkgs' stdenv (tests/nix/standin-nixpkgs): the phases, hooks and helpers the
# flake's derivations use, on this machine's own shell tools (the build sandbox binds the host's
# /usr read-only: see docs/reference/nix.md "The stand-in nixpkgs"). Sourced by the builder (bash).
set -eu -o pipefail

# PATH: the inputs' bin dirs first, then the host's tools.
_inputs_path=""
for _p in ${nativeBuildInputs:-} ${buildInputs:-} ${standinBaseInputs:-}; do
  [ -d "$_p/bin" ] && _inputs_path="$_inputs_path${_inputs_path:+:}$_p/bin"
done
export PATH="${_inputs_path}${_inputs_path:+:}/usr/bin:/bin"
export HOME=/homeless-shelter
export TMPDIR="${TMPDIR:-/tmp}"
export SOURCE_DATE_EPOCH=315532800
[ -n "${standinCc:-}" ] && export NIX_CC="$standinCc"

# runHook NAME: runs the hook string the derivation set (preBuild, postInstall, ...).
runHook() {
  local hook=$1
  if [ -n "${!hook:-}" ]; then eval "${!hook}"; fi
}

# makeWrapper EXE OUT [--add-flags F] [--set K V] [--suffix/--prefix VAR SEP VAL]...
makeWrapper() {
  local exe=$1 out=$2
  shift 2
  local lines="" flags=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --add-flags) flags="$flags $2"; shift 2 ;;
      --set) lines="${lines}export $2=$(printf '%q' "$3")"$'\n'; shift 3 ;;
      --suffix) lines="${lines}export $2=\"\${$2:+\$$2$3}\"$(printf '%q' "$4")"$'\n'; shift 4 ;;
      --prefix) lines="${lines}export $2=$(printf '%q' "$4")\"\${$2:+$3\$$2}\""$'\n'; shift 4 ;;
      *) echo "stand-in makeWrapper: unsupported flag '$1' (supported: --add-flags, --set, --suffix, --prefix)" >&2; return 1 ;;
    esac
  done
  mkdir -p "$(dirname "$out")"
  printf '#!%s\n%sexec %q%s "$@"\n' "$standinShell" "$lines" "$exe" "$flags" >"$out"
  chmod +x "$out"
}

# patchShebangs DIR: `#!/usr/bin/env x` and `#!/bin/x` pointed at x on PATH (a store path).
patchShebangs() {
  local f first interp cmd
  while IFS= read -r -d '' f; do
    IFS= read -r first <"$f" || true
    case "$first" in
      '#!/usr/bin/env '*) cmd=${first#'#!/usr/bin/env '}; interp=${cmd%% *} ;;
      '#!/bin/'*|'#!/usr/bin/'*) cmd=${first#'#!'}; interp=$(basename "${cmd%% *}") ;;
      *) continue ;;
    esac
    local found
    found=$(command -v "$interp" || true)
    case "$found" in /nix/store/*) ;; *) continue ;; esac
    local rest=${cmd#"$interp"}
    [ "$rest" = "$cmd" ] && rest=${cmd#*"$interp"}
    sed -i "1s|.*|#!$found$rest|" "$f"
  done < <(find "$1" -type f -perm -0100 -print0)
}

# linkTree DEST COLLISIONS PKG...: every file of each PKG symlinked at the same place under DEST
# (buildEnv's symlink tree, an image's root); a file two install fails unless COLLISIONS is
# "ignore" (then the first wins).
linkTree() {
  local dest=$1 collisions=$2 p f
  shift 2
  mkdir -p "$dest"
  for p in "$@"; do
    while IFS= read -r f; do
      mkdir -p "$dest/$(dirname "$f")"
      if [ -e "$dest/$f" ] || [ -L "$dest/$f" ]; then
        [ "$collisions" = ignore ] && continue
        echo "${name:-linkTree}: collision between $(readlink "$dest/$f") and $p/$f; set ignoreCollisions = true or drop one of them" >&2
        return 1
      fi
      ln -s "$p/$f" "$dest/$f"
    done < <(cd "$p" && find . -mindepth 1 \( -type f -o -type l \) -printf '%P\n' | sort)
  done
}

unpackPhase() {
  if [ -d "$src" ]; then
    cp -r --no-preserve=mode "$src" source
  else
    mkdir source
    tar -xf "$src" -C source --strip-components=1 --no-same-owner
  fi
  cd source
}
installPhase() { echo "stand-in stdenv: no installPhase given for $name" >&2; return 1; }

genericBuild() {
  if [ -n "${buildCommand:-}" ]; then
    eval "$buildCommand"
    return
  fi
  local phase
  for phase in unpackPhase configurePhase buildPhase installPhase fixupPhase installCheckPhase; do
    case "$phase" in
      unpackPhase) [ -n "${dontUnpack:-}" ] && continue ;;
      configurePhase) [ -n "${dontConfigure:-}" ] || [ -z "${configurePhase:-}" ] && continue ;;
      buildPhase) [ -n "${dontBuild:-}" ] || [ -z "${buildPhase:-}" ] && continue ;;
      fixupPhase) [ -d "${out:-/nonexistent}" ] && patchShebangs "$out"; continue ;;
      installCheckPhase) [ -n "${doInstallCheck:-}" ] || continue ;;
    esac
    echo "stand-in stdenv: $phase"
    if [ -n "${!phase:-}" ]; then eval "${!phase}"; else "$phase"; fi
  done
}
