# The stand-in's `patchelf` (tests/nix/standin-nixpkgs/default.nix): runs patchelf 0.19 ($real),
# then gives every file it patched whose interpreter is a stand-in loader
# (`<store path>/libexec/standin/<package>/ld-linux*`) that loader's directory as the last entry
# of its RPATH. nixpkgs' glibc loader searches its own lib dir for libc; the stand-in's loader is a
# copy of Debian's, which searches only FHS dirs (/lib/<triplet>, /usr/lib/<triplet>), absent from
# an image: with the RPATH, a binary pointed at it (the Cline host bridge, nix/cline.nix) finds the
# libc beside it, as it would with nixpkgs'.
set -eu
"$real" "$@"
# the file operands: arguments that are not options nor an option's value
files="" skip=0 out=""
for a in "$@"; do
  if [ "$skip" -gt 0 ]; then skip=$((skip - 1)); [ "$prev" = --output ] && out=$a; continue; fi
  prev=$a
  case "$a" in
    --replace-needed) skip=2 ;;
    --set-interpreter|--interpreter|--page-size|--set-rpath|--add-rpath|--add-needed|--remove-needed|\
    --set-soname|--output|--rename-dynamic-symbols|--clear-symbol-version|--set-os-abi) skip=1 ;;
    -*) ;;
    *) files="$files $a" ;;
  esac
done
[ -z "$out" ] || files=$out
for f in $files; do
  interp=$("$real" --print-interpreter "$f" 2>/dev/null) || continue
  case "$interp" in /nix/store/*/libexec/standin/*/ld-linux*) ;; *) continue ;; esac
  dir=${interp%/*}
  [ -e "$dir/libc.so.6" ] || continue
  own=$("$real" --print-rpath "$f")
  case ":$own:" in *":$dir:"*) continue ;; esac
  "$real" --force-rpath --set-rpath "${own:+$own:}$dir" "$f"
done
