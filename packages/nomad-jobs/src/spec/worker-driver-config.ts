import { match } from "ts-pattern";
import type { WorkerDriver } from "./worker-driver.js";
import { envArgv, WORKSPACE_PREP, workerEnvironment } from "./worker-env.js";
import { GRPC_PORT_LABEL } from "./worker-names.js";
import { type WorkerSandbox, writableLayerQuota } from "./worker-resources.js";

/**
 * Entrypoint and arguments of a container task. An override (the exec shell) replaces the image's
 * entrypoint (`flakegym-worker`).
 */
function containerArgv(
  c: { command?: string | undefined; args: readonly string[] },
  override?: { command: string; args: readonly string[] },
): Record<string, unknown> {
  if (override) return { entrypoint: [override.command], args: [...override.args] };
  return { ...(c.command ? { command: c.command } : {}), ...(c.args.length ? { args: [...c.args] } : {}) };
}

/**
 * The driver's own `Config` block (lowercase keys), with the sandbox settings it supports.
 * On non-image drivers (raw_exec, nix) the task runs under `env -i` with `settings` and the Nomad
 * runtime variables of `portLabels` only (see CLEAR_ENV); containers get `settings` as the task's
 * Env and nothing of the client's. `run` replaces what the task runs (the exec job's shell).
 */
export function driverConfig(
  d: WorkerDriver,
  sandbox: WorkerSandbox,
  o: {
    settings: Readonly<Record<string, string>>;
    portLabels?: readonly string[];
    run?: { command: string; args: readonly string[] };
    /** The job's disk (MB): docker's writable layer is capped at it (`writableLayerQuota`). */
    diskMb?: number;
  },
): Record<string, unknown> {
  const allowed = workerEnvironment(o.settings, o.portLabels ?? []);
  const tmpfsBytes = sandbox.tmpfsMb * 1024 * 1024;
  const prep = (command: string, args: readonly string[]) => [
    "-c",
    WORKSPACE_PREP,
    "flakegym-prep",
    command,
    ...args,
  ];
  return match(d)
    .with({ driver: "docker" }, (c) => ({
      image: c.image,
      ...containerArgv(c, o.run),
      ports: [GRPC_PORT_LABEL],
      network_mode: c.networkMode,
      ...(c.runtime ? { runtime: c.runtime } : {}),
      ...writableLayerQuota(sandbox, o.diskMb),
      privileged: false,
      cap_drop: ["ALL"],
      security_opt: ["no-new-privileges"],
      readonly_rootfs: sandbox.readonlyRootfs,
      mount: [{ type: "tmpfs", target: "/tmp", readonly: false, tmpfs_options: { size: tmpfsBytes } }],
      pids_limit: sandbox.pidsLimit,
    }))
    .with({ driver: "podman" }, (c) => ({
      image: c.image,
      ...containerArgv(c, o.run),
      ports: [GRPC_PORT_LABEL],
      network_mode: c.networkMode,
      privileged: false,
      // every capability dropped; the podman driver has no `security_opt` (no-new-privileges) key
      cap_drop: ["ALL"],
      readonly_rootfs: sandbox.readonlyRootfs,
      tmpfs: ["/tmp"],
      pids_limit: sandbox.pidsLimit,
    }))
    .with({ driver: "nix" }, (c) => {
      const inner = o.run ? ["sh", ...o.run.args] : ["sh", ...prep(c.command, c.args)];
      return {
        packages: [c.flake, ...c.extraPackages],
        command: "sh",
        args: envArgv(allowed, inner),
        pid_mode: "private",
        ipc_mode: "private",
      };
    })
    .with({ driver: "raw_exec" }, (c) => {
      const inner = o.run ? [o.run.command, ...o.run.args] : ["/bin/sh", ...prep(c.command, c.args)];
      return { command: "/bin/sh", args: envArgv(allowed, inner) };
    })
    .exhaustive();
}
