import { createHash } from "node:crypto";
import {
  type Allocation,
  buildWorkerJob,
  GRPC_PORT_LABEL,
  idPart,
  JOB_ID_PREFIX,
  type Job,
  sizeWorkerMemory,
  type WorkerDriverInput,
} from "@flakegym/nomad-jobs";
import { match } from "ts-pattern";
import type { WorkerExit, WorkerSpec } from "../types.js";
import { describeTaskEvents } from "./allocation.js";
import { NomadWorkerError } from "./errors.js";
import type { BackendDriver, NomadBackendOptions } from "./options.js";

/**
 * The Nomad backend's pure decisions: the job a worker is dispatched from and its sizing, the
 * driver block, where the workspace comes from, the core's address in an allocation and why an
 * allocation ended. backend.ts re-exports the ones other modules use.
 */

function hash8(value: unknown): string {
  return createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 8);
}

/** What the docker and podman drivers' blocks share: the image and the container's options. */
function containerFields(c: Extract<BackendDriver, { driver: "docker" | "podman" }>, image: string) {
  return {
    image,
    allowMutableTag: c.allowMutableTag,
    args: c.args,
    ...(c.command ? { command: c.command } : {}),
    ...(c.networkMode ? { networkMode: c.networkMode } : {}),
    ...(c.containerPort ? { containerPort: c.containerPort } : {}),
  };
}

/** The driver block of a job for this spec: the backend's driver with the spec's image. */
export function workerDriver(
  d: BackendDriver,
  spec: Pick<WorkerSpec, "image" | "profile">,
): WorkerDriverInput {
  const needImage = () => {
    if (!spec.image) {
      throw new NomadWorkerError(
        "E_NOMAD_CONFIG",
        `the ${d.driver} driver needs an image, and the worker spec has none`,
        {
          hint: "build the profile's or snapshot's image with the flake, push it, and pass it by digest (docs/reference/nomad.md, Image publishing)",
        },
      );
    }
    return spec.image;
  };
  return match(d)
    .with({ driver: "docker" }, (c) => ({
      driver: "docker" as const,
      ...containerFields(c, needImage()),
      ...(c.runtime ? { runtime: c.runtime } : {}),
    }))
    .with({ driver: "podman" }, (c) => ({ driver: "podman" as const, ...containerFields(c, needImage()) }))
    .with({ driver: "nix" }, (c) => {
      const flake = spec.image?.includes("#") ? spec.image : c.flake?.replaceAll("{profile}", spec.profile);
      if (!flake) {
        throw new NomadWorkerError("E_NOMAD_CONFIG", "the nix driver needs a flake output for the worker", {
          hint: "pass the worker spec's image as <flake-ref>#<output>, or set the backend's nix.flake template",
        });
      }
      return { driver: "nix" as const, flake, command: c.command, args: c.args };
    })
    .with({ driver: "raw_exec" }, (c) => ({
      driver: "raw_exec" as const,
      command: c.command,
      args: c.args,
      allowUnisolated: c.allowUnisolated,
    }))
    .exhaustive();
}

/**
 * The directory copied into an empty workspace: the backend's `snapshotDir`, else — for raw_exec,
 * which runs on a client sharing this machine's filesystem (a dev agent, the test double) — the
 * spec's own workspace (the runner's fresh fork). Containers bring their workspace in the image.
 */
export function snapshotDirOf(
  o: NomadBackendOptions,
  spec: Pick<WorkerSpec, "workspace">,
): string | undefined {
  return o.snapshotDir ?? (o.driver.driver === "raw_exec" && spec.workspace ? spec.workspace : undefined);
}

/** raw_exec without a backend snapshot dir: the trajectory's own fork, named by its dispatch. Pure. */
export function dispatchSnapshotDir(
  o: NomadBackendOptions,
  spec: Pick<WorkerSpec, "workspace">,
): string | undefined {
  return o.snapshotDir === undefined ? snapshotDirOf(o, spec) : undefined;
}

/**
 * Resources and sandbox of a worker: memory from the spec's limit (the task's profile) plus the
 * measured core for agents (`sizeWorkerMemory`), the rest from the backend's defaults.
 */
export function workerSizing(o: NomadBackendOptions, spec: WorkerSpec) {
  const memory = sizeWorkerMemory({
    agent: spec.agent,
    limitMb: spec.limits.memoryMb,
    reserveMb: o.resources.memoryMb,
  });
  return {
    resources: {
      cpuMhz: o.resources.cpuMhz,
      ...memory,
      diskMb: spec.limits.diskMb ?? o.resources.diskMb,
    },
    sandbox: { ...o.sandbox, pidsLimit: spec.limits.pids },
  };
}

/**
 * The parameterized parent job a worker for `spec` is dispatched from. Pure. Its id carries the
 * run, the task and a hash of the job's shape, so workers with the same spec share one parent.
 * `nomad render` prints exactly this.
 */
export function workerParentJob(
  o: NomadBackendOptions,
  spec: WorkerSpec,
  policyBaseUrl: string,
  nowMs: number,
): Job {
  const { resources, sandbox } = workerSizing(o, spec);
  const base = {
    runId: spec.runId,
    taskId: spec.taskId,
    profile: spec.profile,
    agent: spec.agent,
    driver: workerDriver(o.driver, spec),
    policyBaseUrl,
    datacenters: o.datacenters,
    constraints: o.constraints,
    resources,
    sandbox,
    env: { ...(spec.env ?? {}) },
    ...(o.workspaceDir ? { workspaceDir: o.workspaceDir } : {}),
    // the backend's own snapshot dir is shared; a trajectory's fork travels in its dispatch
    ...(o.snapshotDir
      ? { snapshotDir: o.snapshotDir }
      : dispatchSnapshotDir(o, spec)
        ? { snapshotDirFromDispatch: true }
        : {}),
    maxRunMs: spec.limits.wallClockMs + o.startTimeoutMs + o.graceMs,
    ...(o.namespace ? { namespace: o.namespace } : {}),
    ...(o.region ? { region: o.region } : {}),
    ...(o.nodePool ? { nodePool: o.nodePool } : {}),
  };
  let shape: Job;
  try {
    shape = buildWorkerJob({ ...base, jobId: "x", expiresAtMs: 1 });
  } catch (cause) {
    throw new NomadWorkerError("E_NOMAD_CONFIG", `cannot build the worker job: ${(cause as Error).message}`, {
      cause,
    });
  }
  const id = `${JOB_ID_PREFIX}${idPart(spec.runId, 24)}-${idPart(spec.taskId, 40)}-${spec.agent ? "agent" : "cmd"}-${hash8(shape)}`;
  return buildWorkerJob({ ...base, jobId: id, expiresAtMs: nowMs + o.parentTtlMs });
}

export function addressOf(alloc: Allocation, jobId: string): string {
  const p = alloc.AllocatedResources?.Shared?.Ports.find((x) => x.Label === GRPC_PORT_LABEL);
  if (!p) {
    throw new NomadWorkerError(
      "E_NOMAD_ALLOC_FAILED",
      `allocation ${alloc.ID} of ${jobId} has no '${GRPC_PORT_LABEL}' port`,
      {
        jobId,
        allocId: alloc.ID,
        hint: "the job's network block lost its dynamic port; this is a bug in the job builder",
      },
    );
  }
  const host = p.HostIP.includes(":") ? `[${p.HostIP}]` : p.HostIP;
  return `${host}:${p.Value}`;
}

/** Why an allocation ended, as the worker contract says it. */
export function exitOf(alloc: Allocation): WorkerExit {
  const events = Object.values(alloc.TaskStates).flatMap((s) => s.Events);
  const oom = events.some((e) => e.Type === "Terminated" && e.Details.oom_killed === "true");
  const lines = describeTaskEvents(alloc).slice(-6).join("; ");
  if (/max_run_duration/.test(alloc.ClientDescription ?? "")) {
    return { reason: "wall_clock", detail: `allocation ${alloc.ID}: ${alloc.ClientDescription}` };
  }
  if (oom) return { reason: "memory", detail: `allocation ${alloc.ID} was killed for memory: ${lines}` };
  return {
    reason: "crashed",
    detail: `allocation ${alloc.ID} is ${alloc.ClientStatus} (${alloc.ClientDescription ?? ""}): ${lines}`,
  };
}
