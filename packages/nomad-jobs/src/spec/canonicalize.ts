import { match } from "ts-pattern";
import { hours, minutes, seconds } from "../duration.js";
import type {
  CanonicalJob,
  EphemeralDisk,
  Job,
  JobType,
  LogConfig,
  ReschedulePolicy,
  Resources,
  RestartPolicy,
  Task,
  TaskGroup,
} from "./job.js";

/**
 * Fills every default the way Nomad does (its `api` package's `Canonicalize()` plus the two the
 * server adds: `Datacenters = ["*"]`, `NodePool = "default"`), so the result is what the server
 * stores. Pure: returns a new job, never mutates its input.
 */

export const DEFAULT_NAMESPACE = "default";
export const DEFAULT_REGION = "global";
export const DEFAULT_NODE_POOL = "default";
export const DEFAULT_PRIORITY = 50;

export function defaultRestartPolicy(type: JobType): Required<RestartPolicy> {
  return match(type)
    .with("service", "system", () => ({
      Attempts: 2,
      Interval: minutes(30),
      Delay: seconds(15),
      Mode: "fail" as const,
      RenderTemplates: false,
    }))
    .with("batch", "sysbatch", () => ({
      Attempts: 3,
      Interval: hours(24),
      Delay: seconds(15),
      Mode: "fail" as const,
      RenderTemplates: false,
    }))
    .exhaustive();
}

/** `undefined` for system and sysbatch jobs, which never reschedule. */
export function defaultReschedulePolicy(type: JobType): Required<ReschedulePolicy> | undefined {
  return match(type)
    .with("service", () => ({
      Attempts: 0,
      Interval: 0,
      Delay: seconds(30),
      DelayFunction: "exponential" as const,
      MaxDelay: hours(1),
      Unlimited: true,
    }))
    .with("batch", () => ({
      Attempts: 1,
      Interval: hours(24),
      Delay: seconds(5),
      DelayFunction: "constant" as const,
      MaxDelay: 0,
      Unlimited: false,
    }))
    .with("system", "sysbatch", () => undefined)
    .exhaustive();
}

export const DEFAULT_EPHEMERAL_DISK: Required<EphemeralDisk> = { Sticky: false, Migrate: false, SizeMB: 300 };
export const DEFAULT_LOG_CONFIG: Required<LogConfig> = { MaxFiles: 10, MaxFileSizeMB: 10, Disabled: false };
export const DEFAULT_KILL_TIMEOUT = seconds(5);

/** Copies the defined fields of `over` onto `base` (Nomad's `Merge`). */
function merge<T extends object>(base: T, over: Partial<T> | undefined): T {
  const out = { ...base };
  for (const [k, v] of Object.entries(over ?? {})) {
    if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  }
  return out;
}

export function canonicalizeResources(r: Resources | undefined): Resources {
  const out: Resources = { ...r };
  if (out.Cores === undefined) {
    out.Cores = 0;
    if (out.CPU === undefined) out.CPU = 100;
  }
  if (out.CPU === undefined) out.CPU = 0;
  if (out.MemoryMB === undefined) out.MemoryMB = 300;
  if (out.MemoryMaxMB === undefined) out.MemoryMaxMB = 0;
  return out;
}

function canonicalizeTask(task: Task, group: RestartPolicy): Task {
  return {
    ...task,
    Resources: canonicalizeResources(task.Resources),
    KillTimeout: task.KillTimeout ?? DEFAULT_KILL_TIMEOUT,
    LogConfig: merge(DEFAULT_LOG_CONFIG, task.LogConfig),
    RestartPolicy: merge(group, task.RestartPolicy),
  };
}

function canonicalizeGroup(g: TaskGroup, job: Job & { Type: JobType }): TaskGroup {
  const restart = merge(defaultRestartPolicy(job.Type), g.RestartPolicy);
  const reschedDefault = defaultReschedulePolicy(job.Type);
  const out: TaskGroup = {
    ...g,
    Count: g.Count ?? 1,
    EphemeralDisk: merge(DEFAULT_EPHEMERAL_DISK, g.EphemeralDisk),
    RestartPolicy: restart,
    Tasks: g.Tasks.map((t) => canonicalizeTask(t, restart)),
  };
  if (reschedDefault) out.ReschedulePolicy = merge(reschedDefault, g.ReschedulePolicy);
  return out;
}

export function canonicalizeJob(job: Job): CanonicalJob {
  const type = job.Type ?? "service";
  const base = {
    ...job,
    Name: job.Name ?? job.ID,
    Type: type,
    Namespace: job.Namespace ?? DEFAULT_NAMESPACE,
    Region: job.Region ?? DEFAULT_REGION,
    Priority: job.Priority ?? DEFAULT_PRIORITY,
    AllAtOnce: job.AllAtOnce ?? false,
    Datacenters: job.Datacenters && job.Datacenters.length > 0 ? [...job.Datacenters] : ["*"],
    NodePool: job.NodePool || DEFAULT_NODE_POOL,
  };
  return { ...base, TaskGroups: job.TaskGroups.map((g) => canonicalizeGroup(g, base)) };
}
