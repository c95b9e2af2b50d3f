# The stand-in's clang (tests/nix/standin-nixpkgs, buildCommand of `clang`): Debian's clang, copied
# with its libraries and resource dir ($clangUnwrapped), run on the profiles' gcc toolchain
# ($gccUnwrapped: glibc's sysroot, crt objects, libgcc, libstdc++'s headers, as and ld), as
# nixpkgs' clang wrapper runs it on its libc and gcc. What it builds runs with nothing of the host.
set -eu
export PATH=/usr/bin:/bin
machine=$(ls "$gccUnwrapped/lib/gcc")
version=$(ls "$gccUnwrapped/lib/gcc/$machine")
sys=$gccUnwrapped/sysroot
mkdir -p "$out/bin" "$out/nix-support"
. "$ccWrapperScript"
flags="--sysroot=$sys --gcc-toolchain=$gccUnwrapped -B$gccUnwrapped/lib/gcc/$machine/$version"
write_cc_wrapper "$out/bin/clang" "$clangUnwrapped/bin/clang" "$flags"
write_cc_wrapper "$out/bin/clang++" "$clangUnwrapped/bin/clang++" "$flags"
ln -s clang "$out/bin/cc"
ln -s clang++ "$out/bin/c++"
ln -s "$clangUnwrapped/bin/clang-cpp" "$out/bin/cpp"
echo "$sys/lib64/ld-linux-x86-64.so.2" >"$out/nix-support/dynamic-linker"
