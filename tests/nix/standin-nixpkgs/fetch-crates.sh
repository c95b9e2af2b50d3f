# The stand-in importCargoLock's fixed-output fetch (import-cargo-lock.nix): every registry crate
# of the lock in $src, downloaded by cargo from its default registry (`cargo fetch --locked`: the
# lock decides, nothing is resolved), each `.crate` checked against the lock's checksum, then
# $out/<name>-<version>.crate for exactly the lock's crates.
mkdir -p "$TMPDIR/ws" "$out"
cp -r "$src/." "$TMPDIR/ws"
chmod -R u+w "$TMPDIR/ws"
export CARGO_HOME="$TMPDIR/cargo-home"
mkdir -p "$CARGO_HOME"
if [ -z "$outputHash" ] || [ "$outputHash" = "sha256-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=" ]; then
  echo "stand-in importCargoLock: no hash recorded for this Cargo.lock (sha256 $lockHash): record the" >&2
  echo "  'got:' hash Nix prints after this build in tests/nix/standin-nixpkgs/cargo-crates.json under \"$lockHash\"" >&2
fi
(cd "$TMPDIR/ws" && cargo fetch --locked --quiet)
bad=0
while read -r name version sum; do
  f=$(find "$CARGO_HOME/registry/cache" -name "$name-$version.crate" -print -quit)
  if [ -z "$f" ]; then echo "stand-in importCargoLock: cargo fetched no $name-$version.crate" >&2; bad=1; continue; fi
  got=$(sha256sum "$f" | cut -d' ' -f1)
  if [ "$got" != "$sum" ]; then
    echo "stand-in importCargoLock: $name-$version.crate has sha256 $got, the lock says $sum" >&2; bad=1; continue
  fi
  cp "$f" "$out/$name-$version.crate"
done < "$crateListPath"
[ "$bad" = 0 ] || exit 1
echo "stand-in importCargoLock: $(ls "$out" | wc -l) crates, each matching the lock's checksum"
