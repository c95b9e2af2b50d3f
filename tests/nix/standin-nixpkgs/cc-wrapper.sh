# Sourced by the stand-in's compilers (gcc-sysroot.sh, clang-wrapper.sh; tests/nix/standin-nixpkgs):
# write_cc_wrapper <wrapper> <real driver> <flags for every call> writes a driver that runs the
# real one with those flags and, when it links, the sysroot's loader and libraries as the
# program's interpreter and RPATH (what nixpkgs' cc-wrapper does with its libc), so what it builds
# runs in an image without /lib64 (DT_RPATH, which also serves libstdc++'s own libm). Needs $sys
# (the sysroot), $machine (the target triplet) and $standinShellPath.
write_cc_wrapper() {
  cat >"$1" <<WRAPPER
#!$standinShellPath
link=1
for a in "\$@"; do
  case "\$a" in -c|-S|-E|-M|-MM|-fsyntax-only|--version|-dumpversion|-dumpmachine|-print-*) link=0 ;; esac
done
if [ \$link = 1 ]; then
  exec $2 $3 -Wl,--dynamic-linker=$sys/lib64/ld-linux-x86-64.so.2 -Wl,--disable-new-dtags,-rpath,$sys/usr/lib/$machine "\$@"
fi
exec $2 $3 "\$@"
WRAPPER
  chmod +x "$1"
}
