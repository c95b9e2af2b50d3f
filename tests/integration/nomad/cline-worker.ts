import { fileURLToPath } from "node:url";
import { resolveClinePackage } from "@flakegym/cline-vendor";

/** cline-vendor's supervisor, as a raw_exec task runs it (this checkout's copy). */
export const SUPERVISOR = fileURLToPath(
  new URL("../../../packages/cline-vendor/supervisor/cline-supervisor.mjs", import.meta.url),
);

/**
 * The raw_exec driver block of a worker that runs the real Cline core through the supervisor on
 * the allocation's dynamic ports, in the allocation's workspace and config dir (the worker
 * contract's FLAKEGYM_* settings; what the image entrypoint `flakegym-worker` does, without an
 * image). raw_exec runs on the client itself, so host paths are fine.
 */
export function rawExecClineDriver() {
  const cline = resolveClinePackage();
  // The backend's preparation step has created FLAKEGYM_WORKSPACE, _CONFIG_DIR and _HOME.
  const script = [
    'export HOME="$FLAKEGYM_HOME"',
    `exec "${process.execPath}" "${SUPERVISOR}" --host-bin "${cline.hostBinary}" --core-js "${cline.coreJs}"` +
      ` --node-path "${cline.nodeModules}:${cline.fakeNodeModules}" --workspace "$FLAKEGYM_WORKSPACE"` +
      ' --config "$FLAKEGYM_CONFIG_DIR" --core-address "$NOMAD_IP_grpc:$FLAKEGYM_CORE_PORT"' +
      ' --host-port "$FLAKEGYM_HOST_PORT"',
  ].join("\n");
  return { driver: "raw_exec" as const, command: "/bin/sh", args: ["-c", script], allowUnisolated: true };
}
