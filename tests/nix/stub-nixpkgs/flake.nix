{
  description = "Test stub of nixpkgs for offline checks of flakegym's flake: structure, not builds (see default.nix)";

  outputs =
    { self }:
    {
      legacyPackages = builtins.listToAttrs (
        map
          (system: {
            name = system;
            value = import ./default.nix { inherit system; };
          })
          [
            "x86_64-linux"
            "aarch64-linux"
            "x86_64-darwin"
            "aarch64-darwin"
          ]
      );
    };
}
