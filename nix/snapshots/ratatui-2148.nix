# Catalog task `ratatui-2148` ("Add support for vertical gauges"): ratatui at the pinned commit.
# `src` is the flake input `ratatui` (flake.lock pins it). The other fields are the runner's
# snapshot key inputs (packages/runner/src/snapshots): `repo` is the clone URL the dataset row
# names, `install` the commands that build the snapshot (offline, against crates vendored from
# the repository's own Cargo.lock), `network` what that build needed.
{ src }:
{
  task = "ratatui-2148";
  repo = "https://github.com/ratatui/ratatui";
  commit = "527e1df9296e4b6d56dc665788ce558558b480c6";
  profile = "rust";
  inherit src;
  # What the first `cargo test` in a worker would build: every test target of the workspace.
  install = [ "cargo test --workspace --no-run --locked --offline" ];
  smoke = [ ];
  network = "none";
}
