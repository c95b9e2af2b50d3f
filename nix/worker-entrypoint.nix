# The image entrypoint `flakegym-worker`. With a command (`podman run IMAGE cargo test`) it runs
# that command (scoring workers). Without one it starts one agent: cline-host, then cline-core
# serving gRPC on FLAKEGYM_CORE_PORT on all interfaces of the container, and stops both when
# either exits or the container is told to stop.
{ pkgs, cline }:
pkgs.writeShellApplication {
  name = "flakegym-worker";
  runtimeInputs = [
    pkgs.coreutils
    cline
  ];
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
    export PROTOBUS_ADDRESS="''${PROTOBUS_ADDRESS:-0.0.0.0:$FLAKEGYM_CORE_PORT}"
    export HOST_BRIDGE_ADDRESS="''${HOST_BRIDGE_ADDRESS:-127.0.0.1:$FLAKEGYM_HOST_PORT}"
    mkdir -p "$config" "$HOME"
    if [ ! -d "$workspace" ]; then
      echo "flakegym-worker: workspace $workspace does not exist; mount it or set FLAKEGYM_WORKSPACE" >&2
      exit 2
    fi

    echo "flakegym-worker: cline ${cline.version}, host :$FLAKEGYM_HOST_PORT, core $PROTOBUS_ADDRESS, workspace $workspace"
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
  passthru = {
    inherit cline;
  };
}
