import { match } from "ts-pattern";
import type { WorkerDriver } from "./worker-driver.js";
import { GRPC_PORT_LABEL, HOST_PORT_LABEL, META } from "./worker-names.js";

/**
 * The environment of the worker command: the settings of the image entrypoint (WORKER_ENV), the
 * allowlist its processes run with (nothing inherited from the Nomad client) and the shell steps
 * that clear the environment and prepare the workspace on non-image drivers.
 */

/**
 * The worker's settings: the environment contract of the image entrypoint `flakegym-worker`
 * (nix/worker-entrypoint.nix): without arguments it starts cline-host on FLAKEGYM_HOST_PORT and
 * cline-core serving gRPC on 0.0.0.0:FLAKEGYM_CORE_PORT, in FLAKEGYM_WORKSPACE, with
 * FLAKEGYM_CONFIG_DIR and HOME = FLAKEGYM_HOME. Nomad interpolates its variables in the values.
 * FLAKEGYM_POLICY_BASE_URL records the gateway URL the runner gives the core. With
 * FLAKEGYM_CORE_TOKEN set, the supervisor serves 0.0.0.0:FLAKEGYM_CORE_PORT as a token gate and the
 * core listens on the task's loopback behind it.
 */
export const WORKER_ENV = {
  corePort: "FLAKEGYM_CORE_PORT",
  hostPort: "FLAKEGYM_HOST_PORT",
  workspace: "FLAKEGYM_WORKSPACE",
  configDir: "FLAKEGYM_CONFIG_DIR",
  home: "FLAKEGYM_HOME",
  snapshotDir: "FLAKEGYM_SNAPSHOT_DIR",
  policyBaseUrl: "FLAKEGYM_POLICY_BASE_URL",
  agent: "FLAKEGYM_AGENT",
  coreToken: "FLAKEGYM_CORE_TOKEN",
} as const;

/** Where a snapshot image keeps its work tree (the agent edits it in the container's own layer). */
export const CONTAINER_WORKSPACE = "/workspace";

/** A Nomad runtime variable reference, `${name}`, interpolated by Nomad in env and driver config. */
export function nomadVar(name: string): string {
  return "$" + `{${name}}`;
}

/**
 * Outside a container (raw_exec, nix) nothing provides the workspace: this shell step creates the
 * worker's directories, copies FLAKEGYM_SNAPSHOT_DIR into an empty workspace, then runs "$@".
 * Written without `${...}` so Nomad's interpolation of args leaves it alone.
 */
export const WORKSPACE_PREP = [
  "set -e",
  'mkdir -p "$FLAKEGYM_WORKSPACE" "$FLAKEGYM_CONFIG_DIR" "$FLAKEGYM_HOME"',
  'if [ -n "$FLAKEGYM_SNAPSHOT_DIR" ] && [ -z "$(ls -A "$FLAKEGYM_WORKSPACE")" ]; then cp -a "$FLAKEGYM_SNAPSHOT_DIR/." "$FLAKEGYM_WORKSPACE/"; fi',
  'exec "$@"',
].join("\n");

/**
 * Non-image drivers (raw_exec, exec, nix) start a task with the Nomad client's own environment
 * minus a short denylist of Nomad's, Consul's, Vault's and cloud tokens: model API keys, the
 * operator's credentials and anything else the client was started with pass (Nomad:
 * client/allocrunner/taskrunner/task_dir_hook.go `setEnvvars` calls `SetHostEnvvars` unless the
 * driver's FS isolation is "image"; client/taskenv/env.go `SetHostEnvvars`;
 * command/agent/host/host.go `DefaultEnvDenyList`). This step clears it: the worker runs under
 * `env -i` with the task's PATH (a search path, no secret) and the allowlisted names only.
 * Written without `${...}` so Nomad's interpolation of args leaves it alone.
 */
export const CLEAR_ENV = 'exec env -i PATH="$PATH" "$@"';

/** Nomad runtime variables a worker's processes keep (every other NOMAD_* is dropped too). */
export function nomadRuntimeAllowlist(portLabels: readonly string[]): Record<string, string> {
  const names = [
    "NOMAD_ALLOC_DIR",
    "NOMAD_TASK_DIR",
    "NOMAD_ALLOC_ID",
    "NOMAD_JOB_ID",
    `NOMAD_META_${META.trajectory}`,
    ...portLabels.flatMap((l) => [`NOMAD_IP_${l}`, `NOMAD_PORT_${l}`, `NOMAD_ADDR_${l}`]),
  ];
  return Object.fromEntries(names.map((n) => [n, nomadVar(n)]));
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The complete environment of a worker's processes on a non-image driver: the allowlist, nothing
 * inherited. Pure; `envArgv` turns it into the `sh -c CLEAR_ENV` prefix.
 */
export function workerEnvironment(
  env: Readonly<Record<string, string>>,
  portLabels: readonly string[],
): Record<string, string> {
  for (const k of Object.keys(env)) {
    if (!ENV_NAME.test(k)) throw new TypeError(`worker env: '${k}' is not an environment variable name`);
  }
  return { LANG: "C.UTF-8", ...nomadRuntimeAllowlist(portLabels), ...env };
}

/** `sh -c CLEAR_ENV flakegym-env K=V ... <argv>`: runs argv with exactly `env` (and PATH). */
export function envArgv(env: Readonly<Record<string, string>>, argv: readonly string[]): string[] {
  return ["-c", CLEAR_ENV, "flakegym-env", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv];
}

/** The worker's workspace: the image's /workspace in containers, the allocation dir otherwise. */
export function defaultWorkspace(d: WorkerDriver): string {
  return match(d)
    .with({ driver: "docker" }, { driver: "podman" }, () => CONTAINER_WORKSPACE)
    .with({ driver: "nix" }, { driver: "raw_exec" }, () => `${nomadVar("NOMAD_ALLOC_DIR")}/workspace`)
    .exhaustive();
}

/** Settings every worker task gets (see WORKER_ENV). */
export function workerSettings(o: {
  driver: WorkerDriver;
  policyBaseUrl?: string | undefined;
  agent: boolean;
  workspaceDir?: string | undefined;
  snapshotDir?: string | undefined;
  snapshotDirFromDispatch?: boolean | undefined;
}): Record<string, string> {
  return {
    [WORKER_ENV.corePort]: nomadVar(`NOMAD_PORT_${GRPC_PORT_LABEL}`),
    [WORKER_ENV.hostPort]: nomadVar(`NOMAD_PORT_${HOST_PORT_LABEL}`),
    [WORKER_ENV.workspace]: o.workspaceDir ?? defaultWorkspace(o.driver),
    [WORKER_ENV.configDir]: `${nomadVar("NOMAD_ALLOC_DIR")}/cline`,
    [WORKER_ENV.home]: `${nomadVar("NOMAD_TASK_DIR")}/home`,
    ...(o.snapshotDirFromDispatch
      ? { [WORKER_ENV.snapshotDir]: nomadVar(`NOMAD_META_${META.snapshotDir}`) }
      : o.snapshotDir
        ? { [WORKER_ENV.snapshotDir]: o.snapshotDir }
        : {}),
    ...(o.policyBaseUrl ? { [WORKER_ENV.policyBaseUrl]: nomadVar(`NOMAD_META_${META.policyUrl}`) } : {}),
    // The dispatch's token; the supervisor gates the core's gRPC with it. A per-worker random
    // value, not a credential of anything else: it lives in the dispatch's meta.
    ...(o.policyBaseUrl ? { [WORKER_ENV.coreToken]: nomadVar(`NOMAD_META_${META.coreToken}`) } : {}),
    [WORKER_ENV.agent]: o.agent ? "1" : "0",
  };
}
