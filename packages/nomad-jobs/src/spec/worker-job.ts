import { match } from "ts-pattern";
import { z } from "zod";
import { hours, milliseconds, seconds } from "../duration.js";
import { assertNoSecrets, assertRoutableUrl } from "./guards.js";
import { Constraint, type Job, type Task } from "./job.js";
import { checkWorkerDriver, WorkerDriver } from "./worker-driver.js";
import { driverConfig } from "./worker-driver-config.js";
import { workerSettings } from "./worker-env.js";
import { GRPC_PORT_LABEL, HOST_PORT_LABEL, META, WORKER_GROUP, WORKER_TASK } from "./worker-names.js";
import { checkAgentMemory, taskResources, WorkerResources, WorkerSandbox } from "./worker-resources.js";

/**
 * The Cline worker as a Nomad job: one parameterized batch job per (run, task, image), one
 * dispatch per worker (see docs/reference/nomad.md, "Job shape"). Pure: options in, job out.
 */

export const WorkerJobOptions = z
  .object({
    jobId: z.string().min(1),
    runId: z.string().min(1),
    taskId: z.string().min(1),
    profile: z.string().min(1),
    agent: z.boolean().default(true).describe("start the Cline core (false: a command-only worker)"),
    driver: WorkerDriver,
    policyBaseUrl: z.string().describe("base URL the core inside the worker uses for the policy gateway"),
    namespace: z.string().optional(),
    region: z.string().optional(),
    datacenters: z.array(z.string().min(1)).default(["*"]),
    nodePool: z.string().optional(),
    priority: z.number().int().min(1).max(100).optional(),
    constraints: z.array(Constraint).default([]),
    resources: WorkerResources.default(WorkerResources.parse({})),
    sandbox: WorkerSandbox.default(WorkerSandbox.parse({})),
    env: z.record(z.string(), z.string()).default({}).describe("extra env for the agent's processes"),
    workspaceDir: z
      .string()
      .optional()
      .describe("the agent's workspace (default: /workspace in containers, the allocation dir otherwise)"),
    snapshotDir: z
      .string()
      .optional()
      .describe("raw_exec/nix: a directory copied into an empty workspace before the worker starts"),
    snapshotDirFromDispatch: z
      .boolean()
      .default(false)
      .describe(
        "the snapshot directory is per trajectory: each dispatch names it (meta flakegym_snapshot_dir), so one parent serves every trajectory",
      ),
    maxRunMs: z.number().int().positive().optional().describe("Nomad stops the allocation after this long"),
    expiresAtMs: z.number().int().positive().describe("unix ms after which the orphan sweep may purge"),
  })
  .strict();
export type WorkerJobOptions = z.infer<typeof WorkerJobOptions>;
export type WorkerJobInput = z.input<typeof WorkerJobOptions>;

function parseOptions<T extends z.ZodType>(schema: T, input: unknown, what: string): z.infer<T> {
  const r = schema.safeParse(input);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new TypeError(`${what}: option '${i.path.join(".")}': ${i.message}`);
  }
  return r.data;
}

/** The group's dynamic ports: the core's gRPC (mapped to a fixed port in containers) and cline-host's. */
function dynamicPorts(d: WorkerDriver): { Label: string; To?: number }[] {
  const grpc = match(d)
    .with({ driver: "docker" }, { driver: "podman" }, (c) => ({
      Label: GRPC_PORT_LABEL,
      To: c.containerPort,
    }))
    .with({ driver: "nix" }, { driver: "raw_exec" }, () => ({ Label: GRPC_PORT_LABEL }))
    .exhaustive();
  return [grpc, { Label: HOST_PORT_LABEL }];
}

function imageOf(d: WorkerDriver): string {
  return match(d)
    .with({ driver: "docker" }, { driver: "podman" }, (c) => c.image)
    .with({ driver: "nix" }, (c) => c.flake)
    .with({ driver: "raw_exec" }, (c) => c.command)
    .exhaustive();
}

/**
 * The parameterized batch job a worker is dispatched from. Each dispatch must set
 * `flakegym_trajectory` and `flakegym_expires` (Meta) and carries no payload.
 */
export function buildWorkerJob(input: WorkerJobInput): Job {
  const o = parseOptions(WorkerJobOptions, input, "worker job");
  checkWorkerDriver(o.driver);
  assertRoutableUrl(o.policyBaseUrl, "policy gateway URL");
  assertNoSecrets(o.env, "worker env");
  if (o.agent) checkAgentMemory(o.resources);
  const settings = workerSettings(o);
  const task: Task = {
    Name: WORKER_TASK,
    Driver: o.driver.driver,
    Config: driverConfig(o.driver, o.sandbox, {
      settings: { ...o.env, ...settings },
      portLabels: [GRPC_PORT_LABEL, HOST_PORT_LABEL],
      diskMb: o.resources.diskMb,
    }),
    Env: { ...o.env, ...settings },
    Resources: taskResources(o.resources),
    KillTimeout: seconds(10),
    LogConfig: { MaxFiles: 2, MaxFileSizeMB: 20 },
  };
  return {
    ID: o.jobId,
    Name: o.jobId,
    Type: "batch",
    ...(o.namespace ? { Namespace: o.namespace } : {}),
    ...(o.region ? { Region: o.region } : {}),
    ...(o.priority ? { Priority: o.priority } : {}),
    Datacenters: o.datacenters,
    ...(o.nodePool ? { NodePool: o.nodePool } : {}),
    Meta: {
      [META.run]: o.runId,
      [META.task]: o.taskId,
      [META.profile]: o.profile,
      [META.image]: imageOf(o.driver),
      [META.kind]: o.agent ? "agent" : "command",
      [META.expires]: String(o.expiresAtMs),
      // the default a dispatch without a snapshot dir interpolates (Nomad leaves unknown variables as they are)
      ...(o.snapshotDirFromDispatch ? { [META.snapshotDir]: "" } : {}),
    },
    ...(o.constraints.length ? { Constraints: o.constraints } : {}),
    ParameterizedJob: {
      Payload: "forbidden",
      MetaRequired: [META.trajectory, META.expires, META.policyUrl, META.coreToken],
      MetaOptional: [META.attempt, ...(o.snapshotDirFromDispatch ? [META.snapshotDir] : [])],
    },
    TaskGroups: [
      {
        Name: WORKER_GROUP,
        Count: 1,
        Networks: [{ Mode: "host", DynamicPorts: dynamicPorts(o.driver) }],
        // One-shot: a worker that dies is an infra failure the runner records and retries itself.
        RestartPolicy: { Attempts: 0, Mode: "fail", Interval: hours(24), Delay: 0 },
        ReschedulePolicy: { Attempts: 0, Unlimited: false, Interval: 0, Delay: 0 },
        EphemeralDisk: { SizeMB: o.resources.diskMb },
        // Nomad replaces a lost (or unknown) allocation even with reschedule Attempts 0 unless
        // the group says so: a second worker would run the same trajectory.
        Disconnect: { Replace: false },
        ...(o.maxRunMs ? { MaxRunDuration: milliseconds(o.maxRunMs) } : {}),
        Tasks: [task],
      },
    ],
  };
}

/** Wraps a job the way `nomad job run -json` and `POST /v1/jobs` expect. */
export function renderJobJson(job: Job): string {
  return `${JSON.stringify({ Job: job }, null, 2)}\n`;
}
