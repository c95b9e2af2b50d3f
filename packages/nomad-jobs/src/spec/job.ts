import { z } from "zod";

/**
 * The subset of Nomad's job JSON (`POST /v1/jobs {Job}`) that flakegym writes. Field names are
 * exactly the API's (PascalCase); task driver `Config` keys are the driver's own (lowercase).
 * Durations are integer nanoseconds. Optional fields are filled by `canonicalizeJob` with the
 * defaults Nomad's own `api` package applies, so a canonical job is what the server would store.
 *
 * These schemas are `.strict()`: a typo in a field name is an error here, not a field Nomad's JSON
 * decoder silently drops.
 */

const ns = z.number().int().nonnegative();
const StringMap = z.record(z.string(), z.string());

export const Constraint = z
  .object({
    LTarget: z
      .string()
      .describe(
        "attribute to test, e.g. the node attribute attr.kernel.name in Nomad's interpolation syntax",
      ),
    RTarget: z.string().describe("value to compare with"),
    Operand: z.string().describe("=, !=, regexp, version, semver, set_contains, is_set, distinct_hosts, ..."),
  })
  .strict();
export type Constraint = z.infer<typeof Constraint>;

export const Port = z
  .object({
    Label: z
      .string()
      .min(1)
      .describe("port label, referenced by the task (ports = [label]) and NOMAD_PORT_<label>"),
    Value: z.number().int().nonnegative().optional().describe("static host port (0/absent: dynamic)"),
    To: z
      .number()
      .int()
      .optional()
      .describe("port inside the task's network namespace (absent or -1: same as the host port)"),
    HostNetwork: z.string().optional().describe("named host network to allocate the port on"),
  })
  .strict();
export type Port = z.infer<typeof Port>;

export const NetworkResource = z
  .object({
    Mode: z.string().optional().describe('"host" (default), "bridge", "none" or "cni/<name>"'),
    DynamicPorts: z
      .array(Port)
      .optional()
      .describe("ports the scheduler picks from the client's dynamic range"),
    ReservedPorts: z.array(Port).optional().describe("static ports"),
  })
  .strict();
export type NetworkResource = z.infer<typeof NetworkResource>;

export const RestartPolicy = z
  .object({
    Attempts: z.number().int().nonnegative().optional().describe("restarts allowed within Interval"),
    Interval: ns.optional().describe("window for Attempts (ns)"),
    Delay: ns.optional().describe("wait before a restart (ns)"),
    Mode: z.enum(["fail", "delay"]).optional().describe("what happens when Attempts is exhausted"),
    RenderTemplates: z.boolean().optional(),
  })
  .strict();
export type RestartPolicy = z.infer<typeof RestartPolicy>;

export const ReschedulePolicy = z
  .object({
    Attempts: z.number().int().nonnegative().optional().describe("reschedules allowed within Interval"),
    Interval: ns.optional(),
    Delay: ns.optional(),
    DelayFunction: z.enum(["", "constant", "exponential", "fibonacci"]).optional(),
    MaxDelay: ns.optional(),
    Unlimited: z.boolean().optional().describe("reschedule forever (then Attempts is ignored)"),
  })
  .strict();
export type ReschedulePolicy = z.infer<typeof ReschedulePolicy>;

export const EphemeralDisk = z
  .object({
    Sticky: z.boolean().optional(),
    Migrate: z.boolean().optional(),
    SizeMB: z.number().int().positive().optional().describe("disk for the allocation directory (MB)"),
  })
  .strict();
export type EphemeralDisk = z.infer<typeof EphemeralDisk>;

export const Resources = z
  .object({
    CPU: z.number().int().nonnegative().optional().describe("CPU reservation in MHz"),
    Cores: z.number().int().nonnegative().optional().describe("whole cores reserved (instead of CPU)"),
    MemoryMB: z.number().int().positive().optional().describe("memory reserved for scheduling (MB)"),
    MemoryMaxMB: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .describe("hard memory limit when oversubscription is enabled (MB)"),
  })
  .strict();
export type Resources = z.infer<typeof Resources>;

export const LogConfig = z
  .object({
    MaxFiles: z.number().int().positive().optional(),
    MaxFileSizeMB: z.number().int().positive().optional(),
    Disabled: z.boolean().optional(),
  })
  .strict();
export type LogConfig = z.infer<typeof LogConfig>;

export const DispatchPayloadConfig = z
  .object({ File: z.string().describe("path, relative to the task's local/ dir, the payload is written to") })
  .strict();
export type DispatchPayloadConfig = z.infer<typeof DispatchPayloadConfig>;

export const Task = z
  .object({
    Name: z.string().min(1),
    Driver: z.string().min(1).describe("task driver: docker, podman, nix, raw_exec, exec, ..."),
    User: z.string().optional(),
    Config: z.record(z.string(), z.unknown()).describe("driver configuration (the driver's lowercase keys)"),
    Env: StringMap.optional().describe("environment; Nomad interpolates its runtime variables in the values"),
    Meta: StringMap.optional(),
    Resources: Resources.optional(),
    RestartPolicy: RestartPolicy.optional(),
    KillTimeout: ns.optional().describe("grace between the kill signal and SIGKILL (ns)"),
    KillSignal: z.string().optional(),
    LogConfig: LogConfig.optional(),
    DispatchPayload: DispatchPayloadConfig.optional(),
    Constraints: z.array(Constraint).optional(),
  })
  .strict();
export type Task = z.infer<typeof Task>;

export const DisconnectStrategy = z
  .object({
    LostAfter: ns
      .optional()
      .describe("how long a disconnected client's allocations stay unknown before lost (ns)"),
    Replace: z
      .boolean()
      .optional()
      .describe(
        "place a replacement when an allocation is lost or unknown (Nomad's default: true, even with reschedule Attempts 0)",
      ),
    Reconcile: z
      .enum(["best_score", "keep_original", "keep_replacement", "longest_running"])
      .optional()
      .describe("which allocation survives when a disconnected client comes back"),
    StopOnClientAfter: ns
      .optional()
      .describe("a disconnected client stops its allocations after this long (ns)"),
  })
  .strict()
  .describe("the group's disconnect block (Nomad ≥ 1.8)");
export type DisconnectStrategy = z.infer<typeof DisconnectStrategy>;

export const TaskGroup = z
  .object({
    Name: z.string().min(1),
    Count: z.number().int().nonnegative().optional(),
    Constraints: z.array(Constraint).optional(),
    Networks: z.array(NetworkResource).optional(),
    RestartPolicy: RestartPolicy.optional(),
    ReschedulePolicy: ReschedulePolicy.optional(),
    EphemeralDisk: EphemeralDisk.optional(),
    Disconnect: DisconnectStrategy.optional(),
    MaxRunDuration: ns
      .optional()
      .describe("batch jobs: stop the allocation after this long (ns); Nomad ≥ 2.0.2"),
    Meta: StringMap.optional(),
    Tasks: z.array(Task).min(1),
  })
  .strict();
export type TaskGroup = z.infer<typeof TaskGroup>;

export const ParameterizedJobConfig = z
  .object({
    Payload: z.enum(["", "optional", "required", "forbidden"]).optional(),
    MetaRequired: z.array(z.string()).optional().describe("meta keys every dispatch must set"),
    MetaOptional: z.array(z.string()).optional().describe("meta keys a dispatch may set"),
  })
  .strict();
export type ParameterizedJobConfig = z.infer<typeof ParameterizedJobConfig>;

export const JobType = z.enum(["batch", "service", "system", "sysbatch"]);
export type JobType = z.infer<typeof JobType>;

export const Job = z
  .object({
    ID: z
      .string()
      .min(1)
      .refine((s) => !s.includes(" ") && !s.includes("\0"), "a job ID may not contain spaces or NUL"),
    Name: z.string().optional(),
    Type: JobType.optional(),
    Namespace: z.string().optional(),
    Region: z.string().optional(),
    Priority: z.number().int().min(1).max(100).optional(),
    AllAtOnce: z.boolean().optional(),
    Datacenters: z.array(z.string().min(1)).optional(),
    NodePool: z.string().optional(),
    Meta: StringMap.optional(),
    Constraints: z.array(Constraint).optional(),
    ParameterizedJob: ParameterizedJobConfig.optional(),
    TaskGroups: z.array(TaskGroup).min(1),
  })
  .strict();
export type Job = z.infer<typeof Job>;

/** A canonical job: what `canonicalizeJob` returns (every default filled). */
export type CanonicalJob = Job & {
  Name: string;
  Type: JobType;
  Namespace: string;
  Region: string;
  Priority: number;
  AllAtOnce: boolean;
  Datacenters: string[];
  NodePool: string;
};

/** The body of `POST /v1/jobs`, and what `nomad job run -json` reads. */
export const JobRegisterRequest = z
  .object({
    Job,
    EnforceIndex: z
      .boolean()
      .optional()
      .describe("register only if the job's modify index is JobModifyIndex"),
    JobModifyIndex: z.number().int().nonnegative().optional().describe("0 with EnforceIndex: create only"),
    PolicyOverride: z.boolean().optional(),
  })
  .strict();
export type JobRegisterRequest = z.infer<typeof JobRegisterRequest>;

/** Parses a job, throwing an error that names the first bad field. */
export function parseJob(value: unknown): Job {
  const r = Job.safeParse(value);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw new TypeError(`Nomad job spec: field 'Job.${issue.path.join(".")}': ${issue.message}`);
  }
  return r.data;
}
