# The image entrypoint `flakegym-worker`. With a command (`podman run IMAGE cargo test`) it runs
# that command (scoring workers). Without one it starts one agent: cline-host, then cline-core
# serving gRPC on FLAKEGYM_CORE_PORT on all interfaces of the container, and stops both when
# either exits or the container is told to stop.
#
# With cline-vendor's supervisor (`supervisor`, nix/cline-supervisor.nix) the agent is the
# supervisor's children, so containers and local sandboxes share one process manager; extra
# supervisor flags (e.g. `--forward 127.0.0.1:<port>=unix:<gateway socket>`) come from
# FLAKEGYM_SUPERVISOR_ARGS. The supervisor also reads FLAKEGYM_CORE_TOKEN (set by the Nomad
# backend per dispatch): it then gates FLAKEGYM_CORE_PORT with that token and keeps the core on the
# container's loopback (docs/reference/nomad.md, Isolation). Without it (a checkout predating the supervisor)
# this script manages the two processes itself, with no gate: use the supervisor on clusters.
{
  pkgs,
  nodejs,
  cline,
  supervisor ? null,
}:
let
  pkg = "${cline}/${cline.packageDir}";
  start =
    if supervisor != null then
      ''
        # shellcheck disable=SC2086 # FLAKEGYM_SUPERVISOR_ARGS is a list of flags
        exec cline-supervisor \
          --host-bin ${pkg}/bin/cline-host \
          --core-js ${pkg}/cline-core.js \
          --node-path ${pkg}/node_modules:${pkg}/fake_node_modules \
          --node ${nodejs}/bin/node \
          --workspace "$workspace" --config "$config" \
          --core-address "0.0.0.0:$FLAKEGYM_CORE_PORT" --host-port "$FLAKEGYM_HOST_PORT" \
          --diff-dir "$config/flakegym" \
          ''${FLAKEGYM_SUPERVISOR_ARGS:-}
      ''
    else
      ''
        export PROTOBUS_ADDRESS="0.0.0.0:$FLAKEGYM_CORE_PORT"
        export HOST_BRIDGE_ADDRESS="127.0.0.1:$FLAKEGYM_HOST_PORT"
        cline-host --port "$FLAKEGYM_HOST_PORT" --workspace "$workspace" &
        host=$!
        cline-core --port "$FLAKEGYM_CORE_PORT" --host-bridge-port "$FLAKEGYM_HOST_PORT" --config "$config" &
        core=$!

        stop() {
          kill -TERM "$host" "$core" 2>/dev/null || true
        }
        trap stop TERM INT
        status=0
        wait -n "$host" "$core" || status=$?
        stop
        wait || true
        exit "$status"
      '';
in
pkgs.writeShellApplication {
  name = "flakegym-worker";
  runtimeInputs = [
    pkgs.coreutils
    cline
  ]
  ++ (if supervisor != null then [ supervisor ] else [ ]);
  text = ''
    if [ "$#" -gt 0 ]; then
      exec "$@"
    fi

    : "''${FLAKEGYM_CORE_PORT:?set FLAKEGYM_CORE_PORT to the port cline-core serves gRPC on}"
    : "''${FLAKEGYM_HOST_PORT:?set FLAKEGYM_HOST_PORT to the port cline-host listens on}"
    workspace="''${FLAKEGYM_WORKSPACE:-/workspace}"
    config="''${FLAKEGYM_CONFIG_DIR:-/tmp/flakegym/cline-config}"
    # The core creates and reads $HOME/Cline/...: every worker gets its own HOME.
    export HOME="''${FLAKEGYM_HOME:-/tmp/flakegym/home}"
    mkdir -p "$config" "$HOME"
    if [ ! -d "$workspace" ]; then
      echo "flakegym-worker: workspace $workspace does not exist; mount it or set FLAKEGYM_WORKSPACE" >&2
      exit 2
    fi

    echo "flakegym-worker: cline ${cline.version}, host :$FLAKEGYM_HOST_PORT, core 0.0.0.0:$FLAKEGYM_CORE_PORT, workspace $workspace${
      if supervisor != null then " (cline-supervisor)" else ""
    }"
    ${start}
  '';
  passthru = {
    inherit cline supervisor;
  };
}
