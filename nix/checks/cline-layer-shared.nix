# Check: every image carries the same Cline layer (same digest), so a registry or a Nomad node
# stores and pulls it once. Reads the digests the per-image checks wrote.
{ pkgs, util }:
imageChecks:
pkgs.runCommand "flakegym-cline-layer-shared" { } ''
  ${util.concatLines (map (c: ''echo "$(cat ${c}) ${c.name}"'') imageChecks)} > digests
  cat digests
  if [ "$(cut -d' ' -f1 digests | sort -u | wc -l)" -ne 1 ]; then
    echo "the Cline layer differs between images (see the digests above)" >&2
    exit 1
  fi
  cp digests $out
''
