# A file listing the runtime closure of `roots` (every store path they need, one a line), for the
# runner's sandboxes: a store-built node runs there only with its loader, libraries and the Cline
# core bound in (FLAKEGYM_STORE_CLOSURE; packages/runner/src/workers/local/toolchain.ts).
{ pkgs }:
{
  name,
  roots,
}:
pkgs.runCommand "${name}-closure"
  {
    # Nix writes each root's reference graph (path, deriver, count, references) into the build dir.
    exportReferencesGraph = builtins.concatLists (
      builtins.genList (i: [
        "graph${toString i}"
        (builtins.elemAt roots i)
      ]) (builtins.length roots)
    );
  }
  ''
    cat graph* | grep '^/nix/store/' | grep -v '\.drv$' | sort -u > $out
  ''
