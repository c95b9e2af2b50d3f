import { resolveClinePackage, SUPERVISOR_PATH } from "@flakegym/cline-vendor";
import type { BackendDriver } from "./options.js";

/**
 * The raw_exec driver block of an agent worker that runs this machine's pinned Cline (cline-host
 * and cline-core under cline-vendor's supervisor) on the allocation's dynamic ports, in the
 * allocation's workspace and config dir: what the image entrypoint `flakegym-worker` does, without
 * an image. raw_exec has no isolation and uses host paths: only for Nomad clients that share this
 * machine's filesystem (`nomad agent -dev`, the test double). `--diff-dir` lets the runner collect
 * the workspace's diff (docs/reference/nomad.md, Artifacts).
 */
export function rawExecClineDriver(
  node: string = process.execPath,
): Extract<BackendDriver, { driver: "raw_exec" }> {
  const cline = resolveClinePackage();
  const q = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;
  // The backend's preparation step has created FLAKEGYM_WORKSPACE, _CONFIG_DIR and _HOME.
  const script = [
    'export HOME="$FLAKEGYM_HOME"',
    `exec ${q(node)} ${q(SUPERVISOR_PATH)} --host-bin ${q(cline.hostBinary)} --core-js ${q(cline.coreJs)}` +
      ` --node ${q(node)} --node-path ${q(`${cline.nodeModules}:${cline.fakeNodeModules}`)}` +
      ' --workspace "$FLAKEGYM_WORKSPACE" --config "$FLAKEGYM_CONFIG_DIR"' +
      ' --core-address "$NOMAD_IP_grpc:$FLAKEGYM_CORE_PORT" --host-port "$FLAKEGYM_HOST_PORT"' +
      ' --diff-dir "$FLAKEGYM_CONFIG_DIR/flakegym"',
  ].join("\n");
  // Refused until the caller opts in (allowUnisolated): raw_exec isolates nothing.
  return { driver: "raw_exec", command: "/bin/sh", args: ["-c", script], allowUnisolated: false };
}
