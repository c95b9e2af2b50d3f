# A worker image for one profile: the profile's toolchain, Node, the vendored Cline core and the
# worker entrypoint, as a `dockerTools.streamLayeredImage` (a script that streams a docker-archive:
# `nix build .#rust-env-container && ./result | podman load`).
#
# The Cline core is split off into a layer of its own before the popularity contest runs on the
# rest, so every profile image (and every snapshot image) carries the byte-identical Cline layer
# and a registry or a node stores and pulls it once.
{
  pkgs,
  nodejs,
  cline,
  entrypoint,
  supervisor ? null,
}:
{
  profile,
  name ? "flakegym/${profile.nixName}",
  # null: the image's Nix output hash is its tag.
  tag ? null,
  extraContents ? [ ],
  extraCommands ? "",
  extraEnv ? { },
  extraLabels ? { },
  extraPassthru ? { },
  maxLayers ? 100,
}:
let
  env =
    {
      PATH = "/bin:/usr/bin";
      SSL_CERT_FILE = "/etc/ssl/certs/ca-bundle.crt";
      NIX_SSL_CERT_FILE = "/etc/ssl/certs/ca-bundle.crt";
      LANG = "C.UTF-8";
      FLAKEGYM_CLINE_DIR = "${cline}/${cline.packageDir}";
    }
    // profile.env
    // extraEnv;
  labels = {
    "org.opencontainers.image.title" = name;
    "org.opencontainers.image.description" = "flakegym worker: ${profile.description}";
    "org.flakegym.profile" = profile.id;
    "org.flakegym.nix-name" = profile.nixName;
    "org.flakegym.toolchain" = "${profile.toolchain}";
    "org.flakegym.cline.version" = cline.version;
    "org.flakegym.cline.integrity" = cline.integrity;
    "org.flakegym.cline.store-path" = "${cline}";
  }
  // extraLabels;
in
pkgs.dockerTools.streamLayeredImage {
  inherit name tag maxLayers;
  contents = [
    profile.toolchain
    nodejs
    cline
    entrypoint
    pkgs.dockerTools.binSh
    pkgs.dockerTools.usrBinEnv
    pkgs.dockerTools.caCertificates
    pkgs.dockerTools.fakeNss
  ]
  ++ (if supervisor != null then [ supervisor ] else [ ])
  ++ extraContents;
  config = {
    Entrypoint = [ "${entrypoint}/bin/flakegym-worker" ];
    WorkingDir = "/workspace";
    Env = map (k: "${k}=${env.${k}}") (builtins.attrNames env);
    Labels = labels;
  };
  # Writable scratch space; the workspace is bind-mounted (or, in snapshot images, baked in).
  extraCommands = ''
    mkdir -p tmp workspace
    chmod 1777 tmp
  ''
  + extraCommands;
  # Cline first, as one layer (split_paths "main"); then the paths Cline shares with the rest, then
  # the rest, each by popularity; whatever exceeds the layer budget is merged into the last layer.
  # One layer stays free for the customisation layer.
  layeringPipeline = [
    [
      "split_paths"
      [ "${cline}" ]
    ]
    [
      "over"
      "common"
      [ "popularity_contest" ]
    ]
    [
      "over"
      "rest"
      [ "popularity_contest" ]
    ]
    [ "flatten" ]
    [
      "limit_layers"
      (maxLayers - 1)
    ]
  ];
  passthru = {
    inherit profile labels env;
    clineLayer = "${cline}";
    entrypoint = "${entrypoint}/bin/flakegym-worker";
  }
  // extraPassthru;
}
