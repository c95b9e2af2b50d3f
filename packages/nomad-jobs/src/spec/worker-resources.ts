import { z } from "zod";
import type { Task } from "./job.js";

/** What a worker may use: its resources (CPU, memory sized around the Cline core, disk) and sandbox limits. */

/**
 * Memory of one Cline core and its host bridge, measured (FACTS §6, docs/design/cline.md): core RSS
 * ≈ 320 MB idle, ≈ 370–390 MB after tasks; cline-host ≈ 16 MB.
 */
export const CLINE_CORE_MEMORY_MB = 416;
/** The least room an agent worker must have above the core for the agent's own commands. */
export const MIN_AGENT_HEADROOM_MB = 128;
/** Default reservation: the core plus 1 GiB for the agent's builds and tests. */
export const DEFAULT_WORKER_MEMORY_MB = CLINE_CORE_MEMORY_MB + 1024;

export const WorkerResources = z
  .object({
    cpuMhz: z.number().int().positive().default(1000).describe("CPU reservation (MHz)"),
    memoryMb: z
      .number()
      .int()
      .positive()
      .default(DEFAULT_WORKER_MEMORY_MB)
      .describe(
        "Nomad's MemoryMB: reserved for scheduling AND the hard limit (OOM kill) unless the cluster has memory oversubscription enabled (MB)",
      ),
    memoryMaxMb: z
      .number()
      .int()
      .nonnegative()
      .default(0)
      .describe(
        "Nomad's MemoryMaxMB: the hard limit only with memory oversubscription enabled (ignored, with a warning, without it); 0 = none (MB)",
      ),
    diskMb: z.number().int().positive().default(4096).describe("ephemeral disk for the workspace (MB)"),
  })
  .strict();
export type WorkerResources = z.infer<typeof WorkerResources>;

export const WorkerSandbox = z
  .object({
    pidsLimit: z.number().int().positive().default(1024).describe("most processes the worker may run"),
    readonlyRootfs: z
      .boolean()
      .default(false)
      .describe(
        "image filesystem read-only (the agent then cannot edit the image's /workspace: off by default; each container's writable layer is its own and discarded with it)",
      ),
    tmpfsMb: z.number().int().positive().default(512).describe("size of the tmpfs mounted at /tmp (MB)"),
    writableLayerQuota: z
      .boolean()
      .default(true)
      .describe(
        "docker: cap the container's writable layer (where /workspace lives) at the job's disk with storage_opt size; needs a quota-capable storage driver on the client (overlay2 on xfs with pquota, btrfs, zfs)",
      ),
  })
  .strict();
export type WorkerSandbox = z.infer<typeof WorkerSandbox>;

/**
 * Docker's `storage_opt { size }`: the container's writable layer, where the image's /workspace is
 * edited, capped at the job's disk (Nomad's EphemeralDisk caps only the allocation directory, not
 * the layer). Docker refuses the container on a storage driver without quotas, so a client that
 * cannot enforce it fails the task visibly instead of running it uncapped.
 */
export function writableLayerQuota(
  sandbox: WorkerSandbox,
  diskMb: number | undefined,
): { storage_opt?: { size: string } } {
  return sandbox.writableLayerQuota && diskMb ? { storage_opt: { size: `${diskMb}M` } } : {};
}

/**
 * Memory of a worker from its task's limit (the profile's) and whether it runs the core: Nomad
 * reserves `MemoryMB` and, unless memory oversubscription is enabled, also kills the task above it;
 * `MemoryMaxMB` is the hard limit only with oversubscription. So the need (the task's limit plus
 * the measured core) is `MemoryMB` unless the operator asks for a smaller reservation (`reserveMb`,
 * for an oversubscribed cluster), which then moves the need to `MemoryMaxMB`. Pure.
 */
export function sizeWorkerMemory(o: { agent: boolean; limitMb: number; reserveMb?: number | undefined }): {
  memoryMb: number;
  memoryMaxMb: number;
} {
  const need = o.limitMb + (o.agent ? CLINE_CORE_MEMORY_MB : 0);
  const reserve = Math.min(o.reserveMb ?? need, need);
  return { memoryMb: reserve, memoryMaxMb: need > reserve ? need : 0 };
}

/** Throws when an agent worker's memory cannot hold the core (it would be OOM-killed at boot or mid-task). */
export function checkAgentMemory(r: WorkerResources): void {
  const hard = Math.max(r.memoryMb, r.memoryMaxMb);
  const floor = CLINE_CORE_MEMORY_MB + MIN_AGENT_HEADROOM_MB;
  if (hard < floor) {
    throw new TypeError(
      `worker memory ${hard} MB is below ${floor} MB (the measured Cline core, ${CLINE_CORE_MEMORY_MB} MB, ` +
        `plus ${MIN_AGENT_HEADROOM_MB} MB for the agent's commands): Nomad would OOM-kill the worker. MemoryMB is the ` +
        "hard limit unless memory oversubscription is enabled; raise resources.memoryMb",
    );
  }
}

/** Task resources from the worker's sizing. */
export function taskResources(r: WorkerResources): NonNullable<Task["Resources"]> {
  const reserve = r.memoryMaxMb > 0 ? Math.min(r.memoryMb, r.memoryMaxMb) : r.memoryMb;
  return {
    CPU: r.cpuMhz,
    MemoryMB: reserve,
    MemoryMaxMB: r.memoryMaxMb > reserve ? r.memoryMaxMb : 0,
  };
}
