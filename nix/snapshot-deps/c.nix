# C: no package manager, nothing to vendor; the install commands (e.g. `make`) run offline.
_: _: import ../snapshot-no-deps.nix // { kind = "none"; }
