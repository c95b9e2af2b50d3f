import { PODMAN_OWNER_LABEL } from "../../gc/inventory.js";
import { EXEC_ONLY_INIT } from "../exec-only-init.js";
import type { Bind } from "../local/bwrap-args.js";
import { CONTAINER_CAPS } from "../local/container-root.js";
import { workerIdOf } from "../local/decisions.js";
import { depsPath, OFFLINE_ENV, SANDBOX_PATHS } from "../local/shape.js";
import { workspaceRelative } from "../read-only-files.js";
import type { ExecOptions, WorkerSpec } from "../types.js";

/** A worker's container name: the local backend's worker id (run and trajectory, sanitized; a random suffix) under `flakegym-`. Pure. */
export function containerName(spec: WorkerSpec, suffix: string): string {
  return `flakegym-${workerIdOf(spec, false, suffix)}`;
}

/**
 * The container's environment: HOME, PATH (the deps' bins, the backend's prefix, the standard
 * dirs), the deps' own variables, offline settings and the spec's env last. Pure.
 */
export function containerEnv(
  spec: Pick<WorkerSpec, "depsDir" | "profile" | "env">,
  deps: Record<string, string>,
  pathPrefix: readonly string[] = [],
): Record<string, string> {
  return {
    HOME: SANDBOX_PATHS.home,
    PATH: [
      ...(spec.depsDir ? depsPath(SANDBOX_PATHS.deps, spec.profile) : []),
      ...pathPrefix,
      "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ].join(":"),
    LANG: "C.UTF-8",
    TMPDIR: "/tmp",
    ...deps,
    ...OFFLINE_ENV,
    ...spec.env,
  };
}

/**
 * The `podman exec` arguments of one command: `timeout -s KILL` inside (it kills the command's
 * whole process group; the client's own timeout is a backstop) and the CPU rlimit lowered first.
 * Pure.
 */
export function podmanExecArgs(
  spec: Pick<WorkerSpec, "limits">,
  name: string,
  command: string,
  o: Pick<ExecOptions, "cwd" | "env">,
  timeoutMs: number,
): string[] {
  const args = ["exec", "--workdir", o.cwd ?? SANDBOX_PATHS.workspace];
  for (const [k, v] of Object.entries(o.env ?? {})) args.push("--env", `${k}=${v}`);
  const secs = Math.max(1, Math.ceil(timeoutMs / 1000));
  const cpu =
    spec.limits.cpuSeconds === undefined ? "" : `ulimit -t ${spec.limits.cpuSeconds + 2} 2>/dev/null; `;
  args.push(name, "timeout", "-s", "KILL", String(secs), "/bin/sh", "-c", `${cpu}${command}`);
  return args;
}

/** The `podman run` arguments for one worker (pure). */
export function podmanRunArgs(
  spec: WorkerSpec,
  o: {
    name: string;
    image: string;
    runtime: string;
    binds: readonly Bind[];
    tmpSizeMb: number;
    env: Record<string, string>;
    /** uid:gid to run as: the workspace's owner, so it can write its workspace without chown. */
    user: string;
    /**
     * PID 1's command; default {@link EXEC_ONLY_INIT}: a loop that only waits (commands arrive with
     * `podman exec`) and that nothing inside can end.
     */
    command?: readonly string[];
    /** Run in the foreground with stdin attached (the agent's supervisor) instead of `--detach`. */
    foreground?: boolean;
    /** Host dirs bound at /tmp and HOME (a bounded tmpfs), instead of podman tmpfs mounts. */
    state?: { tmp: string; home: string };
    /** The owner tag labelled on the container (`flakegym gc`). */
    owner?: string;
    /** A Harbor task's container (its built tree): a writable root and root's capabilities (workers/local/container-root.ts). */
    container?: boolean;
  },
): string[] {
  const l = spec.limits;
  const a = [
    "run",
    ...(o.foreground ? ["--rm", "--interactive"] : ["--detach"]),
    "--name",
    o.name,
    "--pull",
    "never",
    "--runtime",
    o.runtime,
    "--network",
    "none",
    "--cap-drop",
    "all",
    ...(o.container ? CONTAINER_CAPS.flatMap((c) => ["--cap-add", c]) : []),
    "--security-opt",
    "no-new-privileges",
    // a Harbor container is writable, as Harbor's is (and thrown away with it)
    ...(o.container ? [] : ["--read-only"]),
    "--pids-limit",
    String(l.pids),
    "--memory",
    `${l.memoryMb}m`,
    "--memory-swap",
    `${l.memoryMb}m`,
    "--user",
    o.user,
    "--hostname",
    "flakegym",
    ...(o.state
      ? ["--volume", `${o.state.tmp}:/tmp:rw`, "--volume", `${o.state.home}:${SANDBOX_PATHS.home}:rw`]
      : [
          "--tmpfs",
          `/tmp:rw,size=${o.tmpSizeMb}m,mode=1777`,
          "--tmpfs",
          // podman 4.3's --tmpfs has no uid= option: a sticky world-writable HOME (one user inside).
          `${SANDBOX_PATHS.home}:rw,size=${o.tmpSizeMb}m,mode=1777`,
        ]),
    "--volume",
    `${spec.workspace}:${SANDBOX_PATHS.workspace}:rw`,
    "--workdir",
    SANDBOX_PATHS.workspace,
    "--label",
    "flakegym.worker=1",
    ...(o.owner ? ["--label", `${PODMAN_OWNER_LABEL}=${o.owner}`] : []),
  ];
  if (spec.depsDir) a.push("--volume", `${spec.depsDir}:${SANDBOX_PATHS.deps}:rw`);
  for (const f of spec.readOnlyFiles ?? [])
    a.push("--volume", `${f.hostPath}:${SANDBOX_PATHS.workspace}/${workspaceRelative(f.path)}:ro`);
  for (const m of spec.containerMounts ?? []) a.push("--volume", `${m.hostPath}:${m.path}:ro`);
  if (spec.workspaceAlias) {
    // the task's workdir (e.g. /app) shows the same workspace, with the read-only files there too
    a.push("--volume", `${spec.workspace}:${spec.workspaceAlias}:rw`);
    for (const f of spec.readOnlyFiles ?? [])
      a.push("--volume", `${f.hostPath}:${spec.workspaceAlias}/${workspaceRelative(f.path)}:ro`);
  }
  // No --ulimit: with any --ulimit podman 4.3 also raises RLIMIT_NOFILE/NPROC, which fails here
  // (no CAP_SYS_RESOURCE). CPU time is lowered per exec with `ulimit -t`; disk is bounded by the
  // fork's quota.
  for (const b of o.binds) a.push("--volume", `${b.src}:${b.dest}:${b.rw ? "rw" : "ro"}`);
  for (const [k, v] of Object.entries(o.env)) a.push("--env", `${k}=${v}`);
  a.push(o.image, ...(o.command ?? EXEC_ONLY_INIT));
  return a;
}
