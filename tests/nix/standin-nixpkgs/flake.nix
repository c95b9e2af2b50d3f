{
  description = "A stand-in nixpkgs that builds, from this machine's own tools, for running the flake's outputs offline (see default.nix)";

  # Used as `path:<repo>/tests/nix?dir=standin-nixpkgs` (a modern Nix), so that it reads
  # ../nixpkgs-formals.json; the systems are the stub's (its values are never evaluated here).
  outputs =
    { self }:
    {
      legacyPackages = builtins.mapAttrs (system: _: import ./default.nix { inherit system; }) (
        (import ../stub-nixpkgs/flake.nix).outputs { self = null; }
      ).legacyPackages;
    };
}
