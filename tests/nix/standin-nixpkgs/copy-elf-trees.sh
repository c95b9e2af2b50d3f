# Sourced by copy-host.sh's postCopy for a stand-in package with `elfTrees` (entries
# `dest=/host/dir`, tests/nix/standin-nixpkgs): each dir copied with symlinks dereferenced, and
# every ELF file in it made a closure of its own as copy-host.sh does for `bins`: the libraries it
# loads from outside its tree copied into $out/libexec/standin/<package>, its loader pointed at
# the copy, that dir added after its own RPATH (rustc's $ORIGIN/../lib stays first). Static
# binaries and objects have neither, and are left as they are. A whole toolchain (a rust sysroot,
# GOROOT, gcc's tree) then runs wherever its store path is.
mkdir -p "$libs"
: >"$TMPDIR/standin-elf"
for spec in ${elfTrees:-}; do
  dest=${spec%%=*}; src=$(readlink -f "${spec#*=}")
  [ -d "$src" ] || { echo "stand-in $name: host directory ${spec#*=} is missing (this machine has no such toolchain there; see docs/reference/nix.md)" >&2; exit 1; }
  mkdir -p "$out/$dest"
  # a link the build cannot follow (e.g. into /etc) is kept as a link
  cp -rL --no-preserve=ownership "$src/." "$out/$dest/" 2>/dev/null || cp -r --no-preserve=ownership "$src/." "$out/$dest/"
  chmod -R u+w "$out/$dest"
  # the ELF files, found in one process (a GOROOT has thousands of files)
  python3 -c '
import os, sys
for d, _, fs in os.walk(sys.argv[1]):
    for n in sorted(fs):
        p = os.path.join(d, n)
        if os.path.islink(p):
            continue
        with open(p, "rb") as f:
            if f.read(4) == b"\x7fELF":
                print(p)' "$out/$dest" >"$TMPDIR/elf-files"
  while read -r f; do
    # objects (crt*.o) and static binaries: ELF, nothing loaded
    if ldd "$src/${f#"$out/$dest"/}" >/dev/null 2>&1; then copy_libs "$src/${f#"$out/$dest"/}"; fi
    echo "$f" >>"$TMPDIR/standin-elf"
  done <"$TMPDIR/elf-files"
done
# copy_libs copied the tree's own libraries too (ldd resolves them inside the source): the tree
# keeps its copy, the libs dir only what came from elsewhere
while read -r f; do rm -f "$libs/$(basename "$f")"; done <"$TMPDIR/standin-elf"
loader=$(find "$libs" -maxdepth 1 -name 'ld-linux*.so*' | head -n 1)
[ -n "$loader" ] || { echo "stand-in $name: no ELF loader among the libraries of its elfTrees" >&2; exit 1; }
while read -r f; do
  if patchelf --print-interpreter "$f" >/dev/null 2>&1; then patchelf --set-interpreter "$loader" "$f"; fi
  own=$(patchelf --print-rpath "$f" 2>/dev/null) || continue
  patchelf --force-rpath --set-rpath "${own:+$own:}$libs" "$f"
done <"$TMPDIR/standin-elf"
