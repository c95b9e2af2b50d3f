# A stand-in package copied from this machine (tests/nix/standin-nixpkgs): each `bins` entry
# `name=/host/path` lands in $out/bin/name; an ELF one gets the shared libraries it loads copied
# into $out/libexec/standin/<package> (a dir of its own, so packages joined by buildEnv do not
# collide) and its loader and RPATH pointed there (patchelf), so the package's closure is
# itself: it runs wherever its store path is (a bubblewrap sandbox, an image), never from /usr.
# `trees` entries `dest=/host/dir` are copied verbatim (a language's own library tree).
# `links` entries `name=/host/path` are symlinks to the host (tools too large to copy; they run
# only where the host's file is: said in docs/reference/nix.md).
set -eu -o pipefail
# patchelf 0.19 first ($standinPatchelfBin; Debian 12's 0.14.3 can break an EXEC binary it adds
# an RPATH to: default.nix, patchelfUnwrapped)
export PATH=$standinPatchelfBin:/usr/bin:/bin
libs=$out/libexec/standin/$name
mkdir -p "$out/bin" "$libs"

is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }

copy_libs() {
  ldd "$1" 2>/dev/null | awk '/=> \//{print $3} /^\t\/.*ld-linux/{print $1}' | while read -r lib; do
    base=$(basename "$lib")
    [ -e "$libs/$base" ] && continue
    cp -L "$lib" "$libs/$base"
    # a library's own RUNPATH (LLVM's $ORIGIN/../lib) hides the executable's RPATH from its
    # dependencies: point it at the copies
    if [ -n "$(patchelf --print-rpath "$libs/$base" 2>/dev/null)" ]; then
      chmod u+w "$libs/$base"
      patchelf --set-rpath "$libs" "$libs/$base"
    fi
  done
}

for spec in ${bins:-}; do
  bin=${spec%%=*}; src=$(readlink -f "${spec#*=}")
  [ -e "$src" ] || { echo "stand-in $name: host file ${spec#*=} is missing (install it, or drop $bin from the stand-in)" >&2; exit 1; }
  cp -L "$src" "$out/bin/$bin"
  chmod u+w "$out/bin/$bin"
  if is_elf "$out/bin/$bin" && ldd "$src" >/dev/null 2>&1; then copy_libs "$src"; fi
done
for spec in ${trees:-}; do
  dest=${spec%%=*}; src=${spec#*=}
  mkdir -p "$(dirname "$out/$dest")"
  cp -rL --no-preserve=ownership "$src" "$out/$dest" 2>/dev/null || cp -r --no-preserve=ownership "$src" "$out/$dest"
done
for spec in ${links:-}; do
  bin=${spec%%=*}; src=${spec#*=}
  [ -e "$src" ] || { echo "stand-in $name: host file $src is missing (this machine has no $bin there)" >&2; exit 1; }
  ln -s "$src" "$out/bin/$bin"
done

loader=$(find "$libs" -maxdepth 1 -name 'ld-linux*.so*' | head -n 1)
# The executables only (patching the loader or libc breaks them): DT_RPATH, unlike RUNPATH, also
# serves the libraries' own dependencies.
for f in "$out"/bin/*; do
  [ -f "$f" ] && [ ! -L "$f" ] && is_elf "$f" && [ -n "$loader" ] || continue
  patchelf --print-interpreter "$f" >/dev/null 2>&1 || continue
  chmod u+w "$f"
  patchelf --set-interpreter "$loader" --force-rpath --set-rpath "$libs" "$f"
done
rmdir -p "$libs" 2>/dev/null || true
eval "${postCopy:-}"
