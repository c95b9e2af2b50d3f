import type { ResourceLimits, WorkerExit, WorkerSpec } from "../types.js";
import type { RunningAgent } from "./agent.js";
import type { Bind } from "./bwrap-args.js";
import type { CgroupUsage } from "./cgroup.js";
import { SANDBOX_GATEWAY_PORT, SANDBOX_GATEWAY_SOCKET, SANDBOX_PATHS } from "./shape.js";

/**
 * The local backend's decisions as pure functions of data: a worker's id and binds, a pooled
 * worker's boot budget, what its watchdog and its agent's exit mean, an exec's command line. The
 * orchestrators (open-worker.ts, watchdog.ts, exec.ts) only carry them out.
 */

/** CPU seconds a pooled worker may spend booting and idling on top of the trajectory's budget (per-process backstop only). */
export const POOL_BOOT_CPU_SECONDS = 120;

function sanitize(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40);
}

/** A worker's id (its state dir and cgroup name): the run and trajectory, or the pool key's run and profile; `suffix` makes it unique. Pure. */
export function workerIdOf(spec: WorkerSpec, pooled: boolean, suffix: string): string {
  return `${sanitize(pooled ? `pool-${spec.runId}-${spec.profile}` : `${spec.runId}-${spec.trajectoryId}`)}-${suffix}`;
}

/**
 * What the sandbox binds besides its workspace: an agent's config and socket dirs (same path
 * inside), and the gateway's socket when the spec has one (agents reach the policy through it;
 * exec-only workers are given it too, for contract stage scripts). Pure.
 */
export function workerBindsOf(spec: WorkerSpec, dirs: { config: string; sock: string }): Bind[] {
  const binds: Bind[] = [];
  if (spec.agent) {
    binds.push(
      { src: dirs.config, dest: dirs.config, rw: true },
      { src: dirs.sock, dest: dirs.sock, rw: true },
    );
  }
  if (spec.gateway.socketPath) binds.push({ src: spec.gateway.socketPath, dest: SANDBOX_GATEWAY_SOCKET });
  binds.push(...hostBindsOf(spec));
  for (const m of spec.containerMounts ?? []) binds.push({ src: m.hostPath, dest: m.path });
  return binds;
}

/** The spec's host directories, read-only at their own path (the snapshot's interpreter). Pure. */
export function hostBindsOf(spec: Pick<WorkerSpec, "hostBinds">): Bind[] {
  return (spec.hostBinds ?? []).map((p) => ({ src: p, dest: p }));
}

/** The limits a sandbox starts with: a pooled worker's CPU backstop leaves room for its boot and idle time. Pure. */
export function bootLimitsOf(limits: ResourceLimits, pooled: boolean): ResourceLimits {
  return pooled && limits.cpuSeconds !== undefined
    ? { ...limits, cpuSeconds: limits.cpuSeconds + POOL_BOOT_CPU_SECONDS }
    : limits;
}

/** The read-only files of `spec`, bound over their workspace paths inside the sandbox. Pure. */
export function readOnlyBindsOf(spec: WorkerSpec, relative: (path: string) => string): Bind[] {
  return (spec.readOnlyFiles ?? []).map((f) => ({
    src: f.hostPath,
    dest: `${SANDBOX_PATHS.workspace}/${relative(f.path)}`,
  }));
}

/**
 * The workspace bound again at the spec's alias (a task's workdir such as /app), writable, with the
 * read-only files over it there too — else code under test could write them through the alias. Pure.
 */
export function aliasBindsOf(
  spec: WorkerSpec,
  workspace: string,
  relative: (path: string) => string,
): Bind[] {
  const alias = spec.workspaceAlias;
  if (alias === undefined) return [];
  return [
    { src: workspace, dest: alias, rw: true },
    ...(spec.readOnlyFiles ?? []).map((f) => ({ src: f.hostPath, dest: `${alias}/${relative(f.path)}` })),
  ];
}

/** What one watchdog tick saw. */
export interface WatchdogReading {
  /** The worker serves its trajectory (an idle pooled worker's limits do not count yet). */
  readonly assigned: boolean;
  readonly usage: CgroupUsage | undefined;
  /** The worker's CPU counter when the trajectory was assigned, µs. */
  readonly cpuBaseUsec: number;
  readonly limits: ResourceLimits;
}

/** The CPU limit's end for a reading, when the trajectory's CPU budget is spent. Pure. */
export function cpuOverOf(r: WatchdogReading): WorkerExit | undefined {
  const budget = r.limits.cpuSeconds;
  if (!r.usage || budget === undefined || !r.assigned) return undefined;
  const used = r.usage.cpuUsec - r.cpuBaseUsec;
  if (used < budget * 1e6) return undefined;
  return { reason: "cpu_time", detail: `used ${(used / 1e6).toFixed(1)} s of CPU (limit ${budget} s)` };
}

/**
 * The pids limit's end, from the cgroup's own counter (pids.events `max`: forks the limit refused):
 * any refusal since the trajectory was assigned means its processes hit the limit (a fork bomb keeps
 * it there), so the worker ends as `pids` — a limit, scored, never retried — not as a hang. Pure.
 */
export function pidsExitOf(r: {
  readonly assigned: boolean;
  readonly pidsRejected: number | undefined;
  readonly pidsRejectedBase: number;
  readonly limits: ResourceLimits;
}): WorkerExit | undefined {
  if (!r.assigned || r.pidsRejected === undefined) return undefined;
  const refused = r.pidsRejected - r.pidsRejectedBase;
  if (refused <= 0) return undefined;
  return {
    reason: "pids",
    detail: `process limit ${r.limits.pids} reached: ${refused} fork(s) refused (the cgroup's pids.events)`,
  };
}

/**
 * The memory limit's end, named from the cgroup's own counters. A workspace whose writable layer is a
 * tmpfs keeps its files in memory charged to the worker's group, so an agent filling its disk reaches
 * the memory limit before a larger disk limit: when tmpfs pages (`shmemBytes`, memory.stat `shmem`)
 * hold at least half the limit, the end is the disk's, said so, not the memory's. Pure.
 */
export function memoryExitOf(limits: ResourceLimits, agentKilled = false, shmemBytes?: number): WorkerExit {
  const killed = agentKilled ? " (the agent was killed)" : "";
  const mib = (b: number) => Math.round(b / (1024 * 1024));
  if (shmemBytes !== undefined && shmemBytes * 2 >= limits.memoryMb * 1024 * 1024)
    return {
      reason: "disk",
      detail: `the workspace's files filled the worker's memory: ${mib(shmemBytes)} MiB of its ${limits.memoryMb} MiB memory limit are files on its tmpfs (the cgroup's memory.stat shmem)${limits.diskMb !== undefined ? `, before its ${limits.diskMb} MiB disk limit` : ""}${killed}`,
    };
  const files = shmemBytes !== undefined ? `, ${mib(shmemBytes)} MiB of it files on tmpfs` : "";
  return {
    reason: "memory",
    detail: `memory limit ${limits.memoryMb} MiB reached (the cgroup's memory events${files})${killed}`,
  };
}

/** Whether a watchdog tick checks the disk: an assigned worker, at most every 5 intervals. Pure. */
export function diskCheckDue(assigned: boolean, now: number, lastCheck: number, intervalMs: number): boolean {
  return assigned && now - lastCheck > 5 * intervalMs;
}

/** Why a worker ended when its agent exited by itself: the OOM killer's pick is the memory limit, refused forks the pids limit, else a crash. Pure. */
export function agentExitOf(
  r: Awaited<RunningAgent["exited"]>,
  oom: boolean,
  limits: ResourceLimits,
  pidsExit?: WorkerExit,
  shmemBytes?: number,
): WorkerExit {
  if (oom) return memoryExitOf(limits, true, shmemBytes);
  // an agent that died because it could not fork hit the pids limit: a limit, not a crash
  if (pidsExit) return pidsExit;
  return { reason: "crashed", detail: `agent exited (code ${r.code})${r.detail ? `: ${r.detail}` : ""}` };
}

/** The argv of an exec: `command` by /bin/sh in `cwd`, with `env` added to the sandbox's. Pure. */
export function execArgvOf(
  command: string,
  cwd: string,
  env: Readonly<Record<string, string>> = {},
): string[] {
  const envArgs = Object.entries(env).map(([k, v]) => `${k}=${v}`);
  return ["/usr/bin/env", ...envArgs, "/bin/sh", "-c", `cd "$0" && ${command}`, cwd];
}

/** The policy's base URL inside the sandbox: the supervisor's forwarder plus the trajectory's gateway route. Pure. */
export function policyBaseUrlOf(spec: WorkerSpec): string {
  return `http://127.0.0.1:${SANDBOX_GATEWAY_PORT}${gatewayPath(spec)}`;
}

function gatewayPath(spec: WorkerSpec): string {
  if (!spec.gateway.url) return "/v1";
  try {
    const p = new URL(spec.gateway.url).pathname.replace(/\/$/, "");
    return p || "";
  } catch {
    return "/v1";
  }
}

/**
 * A worker's network: a scoring worker (no agent) gets the dropping namespace when the runner can
 * make one — as root (`unshare --net`) or, without root, inside a user namespace of its own
 * (`userNetns`: the host lets it make one) — so tests that expect a connect timeout to a
 * non-routable address get one; an agent worker keeps the loopback-only namespace, where an
 * offline tool fails at once instead of waiting. A scoring worker that can have neither stays
 * loopback-only (`"none"`; docs/reference/sandbox.md). Pure.
 */
export function sandboxNetworkOf(
  spec: Pick<WorkerSpec, "agent">,
  isRoot: boolean,
  userNetns = false,
): { network: "none" | "dropping"; droppingViaUserNamespace?: true } {
  if (spec.agent || !(isRoot || userNetns)) return { network: "none" };
  return isRoot ? { network: "dropping" } : { network: "dropping", droppingViaUserNamespace: true };
}
