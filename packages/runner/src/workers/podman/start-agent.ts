import { dirname } from "node:path";
import { type ClinePackage, launchClineCore, SUPERVISOR_PATH } from "@flakegym/cline-vendor";
import { removeWorkerDir } from "../bounded-dirs.js";
import type { Bind } from "../local/bwrap-args.js";
import { policyBaseUrlOf, workerBindsOf } from "../local/decisions.js";
import { SANDBOX_GATEWAY_PORT, SANDBOX_GATEWAY_SOCKET, SANDBOX_PATHS } from "../local/shape.js";
import { unixSocketPath } from "../socket-path.js";
import type { Worker, WorkerSpec } from "../types.js";
import { ensureConf, type PodmanState, removeContainer } from "./backend-state.js";
import { type HostDirs, stateArgs } from "./host-dirs.js";
import { podmanRunArgs } from "./run-args.js";
import { makeWorker } from "./worker.js";

/** What `start` hands an agent worker's launch: the container's name, image, env and user, its dirs and core. */
export interface AgentLaunch {
  readonly name: string;
  readonly image: string;
  readonly env: Record<string, string>;
  readonly user: string;
  /** A Harbor task's container (run-args.ts). */
  readonly container?: boolean;
  readonly signal: AbortSignal | undefined;
  readonly host: HostDirs;
  readonly pkg: ClinePackage;
}

/**
 * The agent container's binds: the backend's, the supervisor script, the cline package (unless the
 * image brings its own), the config and socket dirs at their host paths, the gateway's socket. Pure.
 */
export function agentBinds(
  st: Pick<PodmanState, "options">,
  spec: WorkerSpec,
  o: Pick<AgentLaunch, "host" | "pkg">,
): Bind[] {
  return [
    ...(st.options.binds ?? []),
    { src: dirname(SUPERVISOR_PATH), dest: dirname(SUPERVISOR_PATH) },
    ...(st.options.clineFromImage ? [] : [{ src: o.pkg.root, dest: o.pkg.root }]),
    ...workerBindsOf(spec, o.host.dirs),
  ];
}

/**
 * `launchClineCore`'s wrap: the supervisor's command turned into a foreground `podman run`, run from
 * the worker's dir (conmon writes files, an `oom` marker, into its cwd). Host paths of the workspace
 * and the runner's node become their container paths.
 */
function podmanWrap(st: PodmanState, spec: WorkerSpec, o: AgentLaunch, binds: readonly Bind[]) {
  const node = st.options.nodeInImage ?? process.execPath;
  return (cmd: { command: string; args: readonly string[]; env: Record<string, string> }) => {
    const inside = (a: string) =>
      a === spec.workspace ? SANDBOX_PATHS.workspace : a === process.execPath ? node : a;
    const args = podmanRunArgs(spec, {
      name: o.name,
      image: o.image,
      runtime: st.runtime,
      binds,
      tmpSizeMb: st.tmpSizeMb,
      env: { ...cmd.env, ...o.env, HOME: SANDBOX_PATHS.home },
      user: o.user,
      ...(o.container ? { container: true } : {}),
      foreground: true,
      command: [inside(cmd.command), ...cmd.args.map(inside)],
      ...stateArgs(o.host.dirs),
    });
    return {
      command: "env",
      args: ["-C", o.host.dir, st.podman, ...args],
      env: { CONTAINERS_CONF: st.confFile, PATH: process.env.PATH ?? "/usr/bin:/bin" },
    };
  };
}

/**
 * An agent worker: the container's PID 1 is cline-vendor's supervisor, started in the foreground
 * by `launchClineCore` through a `wrap` that turns its command into `podman run`. The supervisor
 * script, the cline package and the config/socket dirs are bound at their host paths; the
 * gateway's socket at /run/flakegym/gateway.sock, forwarded to 127.0.0.1:18080 inside.
 */
export async function startAgent(st: PodmanState, spec: WorkerSpec, o: AgentLaunch): Promise<Worker> {
  const configDir = o.host.dirs.config;
  await ensureConf(st);
  const core = await launchClineCore({
    workspace: spec.workspace,
    configDir,
    home: o.host.dirs.home,
    clinePackage: o.pkg,
    ...(spec.env ? { env: spec.env } : {}),
    ...(o.signal ? { signal: o.signal } : {}),
    startTimeoutMs: st.options.agentStartTimeoutMs ?? 120_000,
    // same-page merging's helper runs /usr/bin/python3, which an image need not have (the
    // launcher probes the host, not the image): podman cores start without it
    memoryMerge: false,
    listen: { kind: "unix", path: unixSocketPath(o.host.dirs.sock, "core.sock") },
    supervisorArgs: ["--forward", `127.0.0.1:${SANDBOX_GATEWAY_PORT}=unix:${SANDBOX_GATEWAY_SOCKET}`],
    wrap: podmanWrap(st, spec, o, agentBinds(st, spec, o)),
  }).catch(async (err: unknown) => {
    await removeContainer(st, o.name);
    await removeWorkerDir(o.host.dir, o.host.dirs).catch(() => {});
    throw err;
  });
  return await makeWorker(st, spec, o.name, o.host, {
    address: core.address,
    policyBaseUrl: policyBaseUrlOf(spec),
    configDir,
    stop: () => core.stop(),
    exited: core.exited,
    heartbeatAgeMs: () => core.heartbeatAgeMs(),
  });
}
