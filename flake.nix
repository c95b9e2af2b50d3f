{
  description = "flakegym: scored, token-faithful Cline rollouts in isolated, reproducible sandboxes";

  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-26.05";

  # Wiring only; profiles, images and the runner arrive with the flake work.
  outputs = { self, nixpkgs }: { };
}
