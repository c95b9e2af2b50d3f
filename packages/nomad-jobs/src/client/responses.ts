import { z } from "zod";

/**
 * The response shapes flakegym reads, field names as the API sends them. Loose objects: Nomad adds
 * fields between versions, and a field we do not read must never fail a parse. Fields we do read
 * are typed and, where Nomad may omit or null them, optional/nullable.
 */

const StringMap = z.record(z.string(), z.string());
const nullableArray = <T extends z.ZodType>(t: T) =>
  z
    .array(t)
    .nullish()
    .transform((v) => v ?? []);
const nullableMap = <T extends z.ZodType>(t: T) =>
  z
    .record(z.string(), t)
    .nullish()
    .transform((v) => v ?? {});

export const ClientStatus = z.enum(["pending", "running", "complete", "failed", "lost", "unknown"]);
export type ClientStatus = z.infer<typeof ClientStatus>;

export const TaskEvent = z.looseObject({
  Type: z
    .string()
    .describe('"Received", "Task Setup", "Driver", "Started", "Terminated", "Driver Failure", ...'),
  Time: z.number().describe("unix nanoseconds"),
  DisplayMessage: z.string().optional(),
  Message: z.string().optional(),
  Details: nullableMap(z.string()),
  ExitCode: z.number().optional(),
  Signal: z.number().optional(),
  DriverError: z.string().optional(),
  SetupError: z.string().optional(),
  KillReason: z.string().optional(),
  FailsTask: z.boolean().optional(),
});
export type TaskEvent = z.infer<typeof TaskEvent>;

export const TaskState = z.looseObject({
  State: z.string().describe("pending | running | dead"),
  Failed: z.boolean().optional(),
  Restarts: z.number().optional(),
  StartedAt: z.string().nullish(),
  FinishedAt: z.string().nullish(),
  Events: nullableArray(TaskEvent),
});
export type TaskState = z.infer<typeof TaskState>;

export const PortMapping = z.looseObject({
  Label: z.string(),
  Value: z.number().int(),
  To: z.number().int().optional(),
  HostIP: z.string(),
});
export type PortMapping = z.infer<typeof PortMapping>;

export const AllocatedResources = z.looseObject({
  Shared: z
    .looseObject({
      Ports: nullableArray(PortMapping),
      DiskMB: z.number().optional(),
    })
    .optional(),
});

const allocCommon = {
  ID: z.string(),
  EvalID: z.string().optional(),
  Name: z.string().optional(),
  Namespace: z.string().optional(),
  NodeID: z.string().optional(),
  NodeName: z.string().optional(),
  JobID: z.string(),
  TaskGroup: z.string().optional(),
  DesiredStatus: z.string().optional(),
  DesiredDescription: z.string().optional(),
  ClientStatus,
  ClientDescription: z.string().optional(),
  TaskStates: nullableMap(TaskState),
  FollowupEvalID: z.string().optional(),
  NextAllocation: z.string().optional(),
  CreateIndex: z.number(),
  ModifyIndex: z.number(),
  CreateTime: z.number().optional(),
  ModifyTime: z.number().optional(),
};

export const AllocationListStub = z.looseObject({
  ...allocCommon,
  AllocatedResources: AllocatedResources.nullish(),
});
export type AllocationListStub = z.infer<typeof AllocationListStub>;

export const Allocation = z.looseObject({
  ...allocCommon,
  AllocatedResources: AllocatedResources.nullish(),
});
export type Allocation = z.infer<typeof Allocation>;

export const JobListStub = z.looseObject({
  ID: z.string(),
  ParentID: z.string().optional(),
  Name: z.string().optional(),
  Namespace: z.string().optional(),
  Type: z.string().optional(),
  ParameterizedJob: z.boolean().optional(),
  Stop: z.boolean().optional(),
  Status: z.string().optional().describe("pending | running | dead"),
  SubmitTime: z.number().optional(),
  CreateIndex: z.number().optional(),
  ModifyIndex: z.number().optional(),
  Meta: nullableMap(z.string()).describe("present when listed with meta=true"),
});
export type JobListStub = z.infer<typeof JobListStub>;

export const JobRegisterResponse = z.looseObject({
  EvalID: z.string().optional(),
  EvalCreateIndex: z.number().optional(),
  JobModifyIndex: z.number().optional(),
  Warnings: z.string().optional(),
  Index: z.number().optional(),
});
export type JobRegisterResponse = z.infer<typeof JobRegisterResponse>;

export const JobDeregisterResponse = z.looseObject({
  EvalID: z.string().optional(),
  EvalCreateIndex: z.number().optional(),
  JobModifyIndex: z.number().optional(),
  Index: z.number().optional(),
});
export type JobDeregisterResponse = z.infer<typeof JobDeregisterResponse>;

export const JobDispatchResponse = z.looseObject({
  DispatchedJobID: z.string().min(1),
  EvalID: z.string().optional(),
  EvalCreateIndex: z.number().optional(),
  JobCreateIndex: z.number().optional(),
  Index: z.number().optional(),
});
export type JobDispatchResponse = z.infer<typeof JobDispatchResponse>;

/** Why the scheduler could not place a task group (part of an evaluation). */
export const AllocationMetric = z.looseObject({
  NodesEvaluated: z.number().optional(),
  NodesFiltered: z.number().optional(),
  NodesAvailable: nullableMap(z.number()),
  ClassFiltered: nullableMap(z.number()),
  ConstraintFiltered: nullableMap(z.number()),
  NodesExhausted: z.number().optional(),
  DimensionExhausted: nullableMap(z.number()),
  QuotaExhausted: nullableArray(z.string()),
});
export type AllocationMetric = z.infer<typeof AllocationMetric>;

export const Evaluation = z.looseObject({
  ID: z.string(),
  JobID: z.string().optional(),
  Status: z.string().describe("pending | blocked | complete | failed | canceled"),
  StatusDescription: z.string().optional(),
  TriggeredBy: z.string().optional(),
  BlockedEval: z.string().optional(),
  FailedTGAllocs: nullableMap(AllocationMetric),
  CreateIndex: z.number().optional(),
  ModifyIndex: z.number().optional(),
});
export type Evaluation = z.infer<typeof Evaluation>;

export const StreamEvent = z.looseObject({
  Topic: z.string(),
  Type: z.string(),
  Key: z.string(),
  Namespace: z.string().optional(),
  FilterKeys: nullableArray(z.string()),
  Index: z.number(),
  Payload: z.record(z.string(), z.unknown()).nullish(),
});
export type StreamEvent = z.infer<typeof StreamEvent>;

/** One NDJSON line of `/v1/event/stream`; `{}` is a heartbeat. */
export const EventFrame = z.looseObject({
  Index: z.number().optional(),
  Events: nullableArray(StreamEvent),
});
export type EventFrame = z.infer<typeof EventFrame>;

export const AgentSelf = z.looseObject({
  config: z
    .looseObject({
      Region: z.string().optional(),
      Datacenter: z.string().optional(),
      NodeName: z.string().optional(),
      Version: z
        .looseObject({
          Version: z.string(),
          VersionPrerelease: z.string().optional(),
          Revision: z.string().optional(),
        })
        .nullish(),
    })
    .nullish(),
  member: z
    .looseObject({
      Name: z.string().optional(),
      Tags: StringMap.nullish(),
    })
    .nullish(),
});
export type AgentSelf = z.infer<typeof AgentSelf>;

/** The version an agent reports: config.Version, else the member's `build` tag. */
export function agentVersion(self: AgentSelf): string | undefined {
  const v = self.config?.Version;
  if (v?.Version) return v.VersionPrerelease ? `${v.Version}-${v.VersionPrerelease}` : v.Version;
  return self.member?.Tags?.build ?? undefined;
}
