{
  description = "A stand-in nixpkgs that builds, from this machine's own tools, for running the flake's outputs offline (see default.nix)";

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
