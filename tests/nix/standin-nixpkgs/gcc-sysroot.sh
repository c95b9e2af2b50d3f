# The stand-in's gcc (tests/nix/standin-nixpkgs, postCopy of `gcc`): the driver, binutils and
# gcc's own tree were copied by copy-host.sh; this adds what a compile and a link need besides,
# so the result runs with nothing of the host:
#   - $out/sysroot: glibc's headers and link files (crt objects, libc.so's linker scripts, the
#     shared libraries a link names), and the loader, as Debian lays them out;
#   - $out/real/<driver>: the copied drivers; gcc finds cc1, collect2 and libgcc relative to its
#     own path ($out/real/../lib/gcc), as (and ld) in that tree;
#   - $out/bin/<driver>: runs the real one with --sysroot (cc-wrapper.sh: when it links, the
#     sysroot's loader and libraries become the program's interpreter and RPATH).
set -eu
machine=$(/usr/bin/gcc -dumpmachine)
version=$(/usr/bin/gcc -dumpversion)
sys=$out/sysroot
mkdir -p "$sys/usr/lib/$machine" "$sys/lib64" "$out/real"
ln -s usr/lib "$sys/lib"
cp -rL --no-preserve=ownership /usr/include "$sys/usr/include"
# g++ looks for its headers (include/c++/<version>) relative to its prefix, not in the sysroot
ln -s sysroot/usr/include "$out/include"
for f in /usr/lib/"$machine"/*crt*.o /usr/lib/"$machine"/lib{c,m,mvec,pthread,dl,rt,util,resolv,anl}.{so,a} \
  /usr/lib/"$machine"/libc_nonshared.a /usr/lib/"$machine"/lib{c.so.6,m.so.6,mvec.so.1,gcc_s.so.1,stdc++.so.6}; do
  [ -e "$f" ] && cp -L "$f" "$sys/usr/lib/$machine/"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$sys/lib64/"
# libgcc_s.so is a linker script naming /lib/<machine>/libgcc_s.so.1 outside the sysroot: the copy's
for s in "$out/lib/gcc/$machine/$version"/*.so; do
  if grep -q 'GNU ld script' "$s" 2>/dev/null; then sed -i "s|/lib/$machine/|$sys/usr/lib/$machine/|g" "$s"; fi
done
for tool in as ld; do mv "$out/bin/$tool" "$out/lib/gcc/$machine/$version/$tool"; done
. "$ccWrapperScript"
for d in gcc g++ cpp; do
  mv "$out/bin/$d" "$out/real/$d"
done
write_cc_wrapper "$out/bin/gcc" "$out/real/gcc" "--sysroot=$sys"
write_cc_wrapper "$out/bin/g++" "$out/real/g++" "--sysroot=$sys"
# cpp never links
printf '#!%s\nexec %s --sysroot=%s "$@"\n' "$standinShellPath" "$out/real/cpp" "$sys" >"$out/bin/cpp"
chmod +x "$out/bin/cpp"
ln -s gcc "$out/bin/cc"
ln -s g++ "$out/bin/c++"
mkdir -p "$out/nix-support"
echo "$sys/lib64/ld-linux-x86-64.so.2" >"$out/nix-support/dynamic-linker"
