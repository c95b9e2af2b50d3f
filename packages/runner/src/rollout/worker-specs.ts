import { join } from "node:path";
import { flakegymCacheRoot } from "../cache-root.mjs";
import type { RunConfig, WorkerImageProvenance } from "../run-format/schema.js";
import { agentIdsOf } from "../tasks/harbor-agent-user.js";
import { rootfsDirOf } from "../tasks/harbor-built.js";
import { SANDBOX_WORKSPACE } from "../tasks/task-spec.js";
import type { WorkerSpec } from "../workers/types.js";
import type { TaskRuntime } from "./wire-tasks.js";
import { agentWorkerWallClockMs, scoringWorkerWallClockMs } from "./worker-deadlines.js";

/** The specs of a rollout's workers, an agent's and a scorer's (pure). */

/** What every worker of a trajectory shares. */
export interface WorkerSpecBase {
  readonly runId: string;
  readonly taskId: string;
  readonly task: TaskRuntime;
  readonly image: WorkerImageProvenance;
  /** The fork the worker runs in. */
  readonly fork: {
    readonly workspace: string;
    readonly deps: string | undefined;
    /** Host dirs its sandboxes bind read-only at their own path (the snapshot's interpreter). */
    readonly hostBinds?: readonly string[] | undefined;
  };
}

/** The `image` field of a spec: none for this machine's /usr. Pure. */
export function imageSpecOf(image: WorkerImageProvenance): Pick<WorkerSpec, "image"> {
  return image === "host /usr" || image.kind === "nix-store" ? {} : { image: image.ref };
}

/**
 * The container paths of a task's workers: the workspace alias (its workdir, a Harbor WORKDIR such
 * as /app), its read-only mounts (task-folder directories at container paths) and, for a Harbor
 * task imported with `--build-env`, its built root filesystem under `cacheRoot`. Pure.
 */
export function aliasSpecOf(
  t: TaskRuntime,
  cacheRoot: string = flakegymCacheRoot(process.env),
): Pick<WorkerSpec, "workspaceAlias" | "containerMounts" | "systemRoot" | "agentUser"> {
  const spec = t.catalog?.spec;
  const mounts = (spec?.mounts ?? []).map((m) => ({ hostPath: join(t.catalog!.dir, m.dir), path: m.at }));
  const rootfs = spec?.metadata?.harbor_rootfs;
  const agentUser = agentIdsOf(spec?.metadata);
  return {
    // a WORKDIR of /workspace is the workspace itself: nothing to alias
    ...(spec?.workdir && spec.workdir !== SANDBOX_WORKSPACE ? { workspaceAlias: spec.workdir } : {}),
    ...(mounts.length > 0 ? { containerMounts: mounts } : {}),
    ...(rootfs ? { systemRoot: rootfsDirOf(cacheRoot, rootfs) } : {}),
    ...(rootfs && agentUser ? { agentUser } : {}),
  };
}

/** A task's limits with a worker's wall clock. Pure. */
export function workerLimitsOf(t: TaskRuntime, wallClockMs: number): WorkerSpec["limits"] {
  return {
    memoryMb: t.limits.memoryMb,
    pids: t.limits.pids,
    cpuSeconds: t.limits.cpuSeconds,
    diskMb: t.limits.diskMb,
    wallClockMs,
  };
}

/**
 * The spec of an agent worker for trajectory `trajectoryId` (workspace: its fork; "warm" for the
 * pool's shape), reaching the gateway's socket and, with `url`, the policy at that URL. Pure.
 */
export function agentWorkerSpec(
  base: WorkerSpecBase,
  trajectoryId: string,
  limits: RunConfig["limits"],
  gateway: { readonly socketPath: string; readonly url?: string | undefined },
): WorkerSpec {
  return {
    runId: base.runId,
    taskId: base.taskId,
    trajectoryId,
    profile: base.task.profile,
    workspace: base.fork.workspace,
    ...(base.fork.deps ? { depsDir: base.fork.deps } : {}),
    ...(base.fork.hostBinds?.length ? { hostBinds: base.fork.hostBinds } : {}),
    gateway: { socketPath: gateway.socketPath, ...(gateway.url ? { url: gateway.url } : {}) },
    limits: workerLimitsOf(base.task, agentWorkerWallClockMs(limits.timeoutMs)),
    agent: true,
    ...imageSpecOf(base.image),
    ...aliasSpecOf(base.task),
  };
}

/** The spec of the exec-only worker that scores trajectory `trajectoryId`'s diff. Pure. */
export function scoringWorkerSpec(
  base: WorkerSpecBase,
  trajectoryId: string,
  config: Pick<RunConfig, "limits" | "testRepeat">,
  readOnlyFiles: WorkerSpec["readOnlyFiles"] | undefined,
): WorkerSpec {
  return {
    runId: base.runId,
    taskId: base.taskId,
    trajectoryId: `${trajectoryId}-score`,
    profile: base.task.profile,
    workspace: base.fork.workspace,
    ...(base.fork.deps ? { depsDir: base.fork.deps } : {}),
    ...(base.fork.hostBinds?.length ? { hostBinds: base.fork.hostBinds } : {}),
    gateway: {},
    limits: workerLimitsOf(
      base.task,
      scoringWorkerWallClockMs(config.limits.testTimeoutMs, config.testRepeat),
    ),
    agent: false,
    ...imageSpecOf(base.image),
    ...aliasSpecOf(base.task),
    ...(readOnlyFiles ? { readOnlyFiles } : {}),
  };
}
