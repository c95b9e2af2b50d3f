import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, createServer as createTcpServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { allows, type DoubleAclGrant, requirementOf } from "./nomad-double-acl.js";
import {
  constraintText,
  type DoubleConstraint,
  type DoubleNode,
  firstUnmet,
} from "./nomad-double-constraints.js";
import { FilterError, matchesFilter, parseFilter } from "./nomad-double-filter.js";
import {
  type AllocatedPort,
  argvOf,
  containerCreateFailure,
  interpolate,
  interpolateDeep,
  startTask,
  type TaskBehavior,
  type TaskHandle,
  type TaskRunContext,
} from "./nomad-double-tasks.js";

export type { TaskBehavior } from "./nomad-double-tasks.js";

/**
 * An in-process Nomad API double: a real HTTP server on loopback port 0 that follows Nomad's
 * documented behaviour for the part flakegym uses, with one client node that really runs tasks:
 *
 * - jobs: register (validation, EnforceIndex), parameterized jobs and dispatch (meta and payload
 *   rules, idempotency tokens, `IdPrefixTemplate`), deregister and purge, list (prefix, meta,
 *   a subset of `filter`), info, allocations, evaluations;
 * - allocations: pending → running → complete/failed, lost on demand; dynamic ports; task events
 *   (Received, Task Setup, Started, Terminated, Driver Failure, Not Restarting, Killing, Killed);
 *   `MaxRunDuration`;
 * - blocking queries (`index`, `wait`, `X-Nomad-Index`), the event stream (NDJSON, `{}`
 *   heartbeats), task logs (`plain=true`, `follow`), `fs/cat` of the allocation directory,
 *   `client/allocation/:id/signal` (to a task's main process),
 *   status/leader, agent/self, ACL tokens;
 * - faults: 5xx or cut connections for the next N matching requests, slow placement, missing
 *   drivers, lost allocations.
 *
 * Tasks: raw_exec/exec run their command as a real process; docker/podman/nix tasks with a
 * command (an entrypoint override, e.g. flakegym's exec jobs) run that command on the host; ones
 * without (the image's entrypoint, e.g. the worker supervisor) serve gRPC (HTTP/2, every call UNIMPLEMENTED) on their ports. `runTask`
 * overrides this per task. There is no port mapping: a task sees its host port as NOMAD_PORT_x.
 * There is no container filesystem either: a container task's paths are this machine's paths, so
 * a test must point such a task's working directories into the allocation dir.
 */

export interface NomadDoubleOptions {
  /** Delay between an evaluation and its placement (slow placement). Default 10 ms. */
  readonly placementDelayMs?: number;
  /** Time an allocation stays pending (task setup, image pull) before its task starts. Default 10 ms. */
  readonly startDelayMs?: number;
  /** Drivers the client node has; tasks needing another one stay unplaced ("missing drivers"). */
  readonly drivers?: readonly string[];
  /**
   * The node's attributes beyond the defaults (`kernel.name` linux, `cpu.arch` amd64,
   * `driver.<name>` for each driver, `driver.docker.runtimes` "runc"), as `${attr.<name>}` in
   * constraints: a job whose constraint the node fails is not placed (`ConstraintFiltered`).
   */
  readonly nodeAttributes?: Readonly<Record<string, string>>;
  /** The node's `meta` (`${meta.<name>}`). */
  readonly nodeMeta?: Readonly<Record<string, string>>;
  /** When set, ACLs are on and this X-Nomad-Token is a management token (every capability). */
  readonly token?: string;
  /**
   * More ACL tokens (secret → what it may do), like Nomad's policies: each request needs the
   * capability its endpoint checks (see nomad-double-acl.ts); otherwise 403 "Permission denied".
   * Setting it turns ACLs on like `token` does.
   */
  readonly aclTokens?: Readonly<Record<string, DoubleAclGrant>>;
  readonly namespaces?: readonly string[];
  readonly region?: string;
  readonly datacenter?: string;
  readonly version?: string;
  /** Event stream heartbeat interval (Nomad: 10 s). Default 100 ms. */
  readonly heartbeatMs?: number;
  /** Decides how a task runs; return undefined for the default. */
  readonly runTask?: (task: DoubleTaskInfo) => TaskBehavior | undefined;
  /**
   * The Nomad client's own environment. Like Nomad, tasks of drivers without image isolation
   * (raw_exec, exec, nix) start with it, minus `envDenylist`. Default: this process's environment.
   */
  readonly clientEnv?: Readonly<Record<string, string | undefined>>;
  /** The client's `env.denylist`. Default: Nomad's (`DEFAULT_ENV_DENYLIST`). */
  readonly envDenylist?: readonly string[];
  /** Whether the client node is ready. A node that is not is never evaluated (see `setNodeReady`). */
  readonly nodeReady?: boolean;
  /**
   * The scheduler's memory oversubscription. Off (Nomad's default): a task is OOM-killed above
   * MemoryMB and MemoryMaxMB is ignored; on: above MemoryMaxMB when set. Default false.
   */
  readonly memoryOversubscription?: boolean;
  /** How often task memory is sampled for the limit. Default 100 ms. */
  readonly memoryPollMs?: number;
  /**
   * Container networks the client's docker/podman have (besides the built-in modes). A task naming
   * another fails to start like on Nomad ("network X not found"). Default `["flakegym-egress"]`.
   */
  readonly networks?: readonly string[];
  /**
   * Whether the client's docker storage driver enforces `storage_opt size`; when false a task that
   * sets it fails to start like docker's overlay2 off xfs-pquota. Default true.
   */
  readonly storageQuota?: boolean;
}

/**
 * Nomad's default client `env.denylist` (command/agent/host/host.go `DefaultEnvDenyList`): the only
 * names kept out of a non-image task's inherited environment. Model API keys are not among them.
 */
export const DEFAULT_ENV_DENYLIST = [
  "CONSUL_TOKEN",
  "CONSUL_HTTP_TOKEN",
  "VAULT_TOKEN",
  "NOMAD_LICENSE",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "GOOGLE_APPLICATION_CREDENTIALS",
] as const;

/** Nomad keeps the last 10 events per task (client/allocrunner/taskrunner/task_runner.go `appendTaskEvent`). */
export const TASK_EVENT_CAPACITY = 10;

/** Drivers whose tasks get the client's environment (their FS isolation is not "image"). */
const HOST_ENV_DRIVERS = new Set(["raw_exec", "exec", "nix"]);

/** What `runTask` sees about a task about to start. */
export interface DoubleTaskInfo {
  readonly allocId: string;
  readonly jobId: string;
  readonly parentId: string;
  readonly taskName: string;
  readonly driver: string;
  readonly config: Readonly<Record<string, unknown>>;
  readonly env: Readonly<Record<string, string>>;
  readonly meta: Readonly<Record<string, string>>;
  readonly ports: readonly AllocatedPort[];
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly query: URLSearchParams;
  readonly headers: IncomingMessage["headers"];
  readonly body: string;
}

export interface FaultMatch {
  readonly method?: string;
  /** Matched against the decoded path. */
  readonly path?: RegExp;
}

type Json = Record<string, unknown>;
type TaskEvent = Json & { Type: string; Time: number };

interface TaskStateRec {
  State: "pending" | "running" | "dead";
  Failed: boolean;
  Restarts: number;
  LastRestart: string;
  StartedAt: string;
  FinishedAt: string;
  Events: TaskEvent[];
}

interface AllocRec {
  ID: string;
  EvalID: string;
  Name: string;
  Namespace: string;
  NodeID: string;
  NodeName: string;
  JobID: string;
  JobType: string;
  TaskGroup: string;
  DesiredStatus: "run" | "stop" | "evict";
  DesiredDescription: string;
  ClientStatus: "pending" | "running" | "complete" | "failed" | "lost";
  ClientDescription: string;
  TaskStates: Record<string, TaskStateRec>;
  AllocatedResources: Json;
  CreateIndex: number;
  ModifyIndex: number;
  AllocModifyIndex: number;
  CreateTime: number;
  ModifyTime: number;
  // not serialized
  handles: Map<string, TaskHandle>;
  dir: string;
  maxRunTimer?: NodeJS.Timeout;
  stopReason?: string;
}

interface JobRec {
  spec: Json;
  ID: string;
  Namespace: string;
  ParentID: string;
  Dispatched: boolean;
  DispatchIdempotencyToken: string;
  Status: "pending" | "running" | "dead";
  Stop: boolean;
  Version: number;
  SubmitTime: number;
  CreateIndex: number;
  ModifyIndex: number;
  JobModifyIndex: number;
}

interface EvalRec {
  ID: string;
  Namespace: string;
  JobID: string;
  Type: string;
  TriggeredBy: string;
  Status: string;
  StatusDescription: string;
  FailedTGAllocs: Record<string, Json> | null;
  BlockedEval: string;
  CreateIndex: number;
  ModifyIndex: number;
  CreateTime: number;
  ModifyTime: number;
}

interface StreamEventRec {
  Topic: string;
  Type: string;
  Key: string;
  Namespace: string;
  FilterKeys: string[];
  Index: number;
  Payload: Json;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const ZERO_TIME = "0001-01-01T00:00:00Z";
const nowNs = () => Date.now() * 1_000_000;
const multiError = (errs: string[]) =>
  `${errs.length} error${errs.length === 1 ? "" : "s"} occurred:\n${errs.map((e) => `\t* ${e}`).join("\n")}\n\n`;

/** Go-style duration strings (`300ms`, `5s`, `1m30s`) or a bare number of seconds. */
function parseGoDuration(s: string): number {
  if (/^\d+$/.test(s)) return Number(s) * 1000;
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let ms = 0;
  let pos = 0;
  while (pos < s.length) {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (!m) throw new HttpError(400, `Invalid wait time: time: invalid duration "${s}"`);
    const n = Number(m[1]);
    const unit = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1e3, m: 6e4, h: 3.6e6 }[m[2]!]!;
    ms += n * unit;
    pos = re.lastIndex;
  }
  return ms;
}

/** Whether `port` can be listened on at `host` right now. */
function canListen(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createTcpServer();
    s.once("error", () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

/**
 * Nomad's default dynamic port range (client `min_dynamic_port` 20000, `max_dynamic_port` 32000):
 * below Linux's ephemeral range (32768–60999), so the outgoing connections of a busy machine never
 * take a port between its choice and the task's listen (an OS-chosen free port could be).
 */
const DYNAMIC_PORTS = { min: 20_000, max: 32_000 } as const;

/** Hands out dynamic ports like a Nomad client: each once, from its range, checked free. */
function dynamicPorts(host: string) {
  const span = DYNAMIC_PORTS.max - DYNAMIC_PORTS.min;
  let next = Math.floor(Math.random() * span);
  const given = new Set<number>();
  return async (): Promise<number> => {
    for (let tried = 0; tried < span; tried++) {
      const port = DYNAMIC_PORTS.min + (next++ % span);
      if (given.has(port) || !(await canListen(host, port))) continue;
      given.add(port);
      return port;
    }
    return await freeTcpPort(host); // the range is spent: any free port
  };
}

async function freeTcpPort(host: string): Promise<number> {
  return await new Promise((resolve, reject) => {
    const s = createTcpServer();
    s.on("error", reject);
    s.listen(0, host, () => {
      const port = (s.address() as AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

export interface NomadDouble {
  /** Base URL, e.g. http://127.0.0.1:43121 (use as NOMAD_ADDR). */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: readonly RecordedRequest[];
  /** The job table (what `GET /v1/jobs?namespace=*` would list), as stored. */
  jobs(): Array<{
    ID: string;
    Namespace: string;
    ParentID: string;
    Status: string;
    Stop: boolean;
    Meta: Record<string, string>;
    spec: Json;
  }>;
  allocations(): Array<Omit<AllocRec, "handles" | "dir" | "maxRunTimer" | "stopReason">>;
  /** Tasks still running a process or listener. */
  liveTasks(): number;
  /** Answers the next `count` matching requests with `status` and `body`. */
  failNext(count: number, status?: number, body?: string, match?: FaultMatch): void;
  /** Cuts the connection of the next `count` matching requests without an answer. */
  dropNext(count: number, match?: FaultMatch): void;
  /** Processes the next `count` matching requests, then cuts the connection instead of answering. */
  loseAnswerNext(count: number, match?: FaultMatch): void;
  /** Marks an allocation lost (its node went down) and kills its tasks. */
  loseAllocation(allocId: string): Promise<void>;
  setPlacementDelay(ms: number): void;
  /**
   * Takes the client node out of (false) or back into (true) scheduling. While it is not ready no
   * node is evaluated: placements fail with `NodesEvaluated: 0` and a blocked evaluation, which
   * places once the node is ready again (Nomad's blocked evals, nomad/blocked_evals.go).
   */
  setNodeReady(ready: boolean): void;
  /** Appends a task event (as a driver, template or restart would), subject to the 10-event cap. */
  addTaskEvent(allocId: string, task: string, type: string, displayMessage?: string): void;
  /** Resolves once `check()` holds, re-checking on every state change (bounded). */
  waitFor(check: () => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startNomadDouble(options: NomadDoubleOptions = {}): Promise<NomadDouble> {
  const region = options.region ?? "global";
  const datacenter = options.datacenter ?? "dc1";
  const version = options.version ?? "2.0.6";
  const drivers = new Set(options.drivers ?? ["docker", "podman", "nix", "raw_exec", "exec"]);
  const namespaces = new Set(options.namespaces ?? ["default"]);
  const containerHost = {
    networks: new Set(options.networks ?? ["flakegym-egress"]),
    storageQuota: options.storageQuota ?? true,
  };
  const hostIp = "127.0.0.1";
  const nodeId = randomUUID();
  const nodeName = "nomad-double-client";
  const node: DoubleNode = {
    name: nodeName,
    datacenter,
    pool: "default",
    nodeClass: "",
    attributes: {
      "kernel.name": "linux",
      "cpu.arch": "amd64",
      "unique.hostname": nodeName,
      ...Object.fromEntries([...drivers].map((d) => [`driver.${d}`, "1"])),
      "driver.docker.runtimes": "runc",
      ...options.nodeAttributes,
    },
    meta: { ...options.nodeMeta },
  };
  const heartbeatMs = options.heartbeatMs ?? 100;
  let placementDelayMs = options.placementDelayMs ?? 10;
  let nodeReady = options.nodeReady ?? true;
  const blockedEvals = new Set<string>();
  const denylist = new Set(options.envDenylist ?? DEFAULT_ENV_DENYLIST);
  const hostEnv = Object.fromEntries(
    Object.entries(options.clientEnv ?? process.env).filter(
      (kv): kv is [string, string] => kv[1] !== undefined && !denylist.has(kv[0]),
    ),
  );
  const startDelayMs = options.startDelayMs ?? 10;
  const root = mkdtempSync(join(tmpdir(), "nomad-double-"));

  let index = 1;
  const tableIndex = { jobs: 1, allocs: 1, evals: 1 };
  const jobs = new Map<string, JobRec>();
  const allocs = new Map<string, AllocRec>();
  const evals = new Map<string, EvalRec>();
  const requests: RecordedRequest[] = [];
  const waiters = new Set<() => void>();
  /**
   * Blocking queries on one allocation, woken only by that allocation's own changes (Nomad's
   * memdb watch sets): a thousand watched allocations must not each wake on every change.
   */
  const allocWaiters = new Map<string, Set<() => void>>();
  /** Each job's allocations and evaluations (by `key(ns, id)`), so per-job reads do not scan everything. */
  const allocsByJob = new Map<string, AllocRec[]>();
  const evalsByJob = new Map<string, EvalRec[]>();
  const allocsOf = (ns: string, jobId: string) => allocsByJob.get(key(ns, jobId)) ?? [];
  const evalsOf = (ns: string, jobId: string) => evalsByJob.get(key(ns, jobId)) ?? [];
  function indexUnder<T>(m: Map<string, T[]>, k: string, v: T) {
    const list = m.get(k);
    if (list) list.push(v);
    else m.set(k, [v]);
  }
  const subscribers = new Set<{
    topics: Map<string, Set<string>>;
    namespace: string;
    send(e: StreamEventRec[], i: number): void;
  }>();
  const eventLog: StreamEventRec[] = [];
  const faults: Array<{
    kind: "fail" | "drop" | "drop-after";
    remaining: number;
    status: number;
    body: string;
    match: FaultMatch;
  }> = [];
  /** Responses whose request was processed but whose answer is to be lost. */
  const loseAnswer = new WeakSet<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const closers = new Set<() => void>();
  let closed = false;

  const nextDynamicPort = dynamicPorts(hostIp);
  const key = (ns: string, id: string) => `${ns}\u0000${id}`;
  const later = (ms: number, f: () => void) => {
    const t = setTimeout(() => {
      timers.delete(t);
      if (!closed) f();
    }, ms);
    timers.add(t);
  };

  /** Commits a state change: bumps the index, publishes events, wakes blocking queries. */
  function commit(table: keyof typeof tableIndex, events: Omit<StreamEventRec, "Index">[] = []): number {
    index++;
    tableIndex[table] = index;
    const stamped = events.map((e) => ({ ...e, Index: index }));
    eventLog.push(...stamped);
    if (eventLog.length > 2000) eventLog.splice(0, eventLog.length - 2000);
    for (const s of subscribers) {
      const mine = stamped.filter((e) => subscriberWants(s, e));
      if (mine.length) s.send(mine, index);
    }
    for (const w of [...waiters]) w();
    for (const e of stamped) {
      const mine = e.Topic === "Allocation" ? allocWaiters.get(e.Key) : undefined;
      if (mine) for (const w of [...mine]) w();
    }
    return index;
  }

  /** The waiter set of allocation `id`'s blocking queries (dropped when its last waiter leaves). */
  function allocWatch(id: string): { add(w: () => void): void; delete(w: () => void): void } {
    return {
      add(w) {
        const set = allocWaiters.get(id) ?? new Set<() => void>();
        allocWaiters.set(id, set);
        set.add(w);
      },
      delete(w) {
        const set = allocWaiters.get(id);
        set?.delete(w);
        if (set?.size === 0) allocWaiters.delete(id);
      },
    };
  }

  function subscriberWants(s: { topics: Map<string, Set<string>>; namespace: string }, e: StreamEventRec) {
    if (s.namespace !== "*" && e.Namespace !== s.namespace) return false;
    const keys = s.topics.get(e.Topic) ?? s.topics.get("*");
    if (!keys) return false;
    return keys.has("*") || keys.has(e.Key) || e.FilterKeys.some((k) => keys.has(k));
  }

  // ---------- views ----------

  function allocJson(a: AllocRec): Json {
    const { handles: _h, dir: _d, maxRunTimer: _t, stopReason: _s, ...rest } = a;
    return structuredClone(rest) as Json;
  }

  function jobJson(j: JobRec): Json {
    return {
      ...structuredClone(j.spec),
      ID: j.ID,
      Name: j.ParentID ? j.ID : ((j.spec.Name as string | undefined) ?? j.ID),
      Namespace: j.Namespace,
      ParentID: j.ParentID,
      Dispatched: j.Dispatched,
      DispatchIdempotencyToken: j.DispatchIdempotencyToken,
      Status: j.Status,
      StatusDescription: "",
      Stop: j.Stop,
      Stable: false,
      Version: j.Version,
      SubmitTime: j.SubmitTime,
      CreateIndex: j.CreateIndex,
      ModifyIndex: j.ModifyIndex,
      JobModifyIndex: j.JobModifyIndex,
    };
  }

  function jobStub(j: JobRec, withMeta: boolean): Json {
    const s = j.spec;
    const summary: Record<string, Json> = {};
    for (const g of (s.TaskGroups as Json[]) ?? []) {
      const mine = allocsOf(j.Namespace, j.ID).filter((a) => a.TaskGroup === g.Name);
      summary[g.Name as string] = {
        Queued: 0,
        Complete: mine.filter((a) => a.ClientStatus === "complete").length,
        Failed: mine.filter((a) => a.ClientStatus === "failed").length,
        Running: mine.filter((a) => a.ClientStatus === "running").length,
        Starting: mine.filter((a) => a.ClientStatus === "pending").length,
        Lost: mine.filter((a) => a.ClientStatus === "lost").length,
        Unknown: 0,
      };
    }
    const children = [...jobs.values()].filter((c) => c.ParentID === j.ID && c.Namespace === j.Namespace);
    return {
      ID: j.ID,
      ParentID: j.ParentID,
      Name: jobJson(j).Name,
      Namespace: j.Namespace,
      Datacenters: s.Datacenters,
      Type: s.Type,
      Priority: s.Priority ?? 50,
      Periodic: false,
      ParameterizedJob: Boolean(s.ParameterizedJob) && !j.Dispatched,
      Stop: j.Stop,
      Status: j.Status,
      StatusDescription: "",
      JobSummary: {
        JobID: j.ID,
        Namespace: j.Namespace,
        Summary: summary,
        Children: {
          Pending: children.filter((c) => c.Status === "pending").length,
          Running: children.filter((c) => c.Status === "running").length,
          Dead: children.filter((c) => c.Status === "dead").length,
        },
        CreateIndex: j.CreateIndex,
        ModifyIndex: j.ModifyIndex,
      },
      CreateIndex: j.CreateIndex,
      ModifyIndex: j.ModifyIndex,
      JobModifyIndex: j.JobModifyIndex,
      SubmitTime: j.SubmitTime,
      ...(withMeta ? { Meta: s.Meta ?? {} } : {}),
    };
  }

  function refreshJobStatus(j: JobRec): boolean {
    const before = j.Status;
    const isParent = Boolean(j.spec.ParameterizedJob) && !j.Dispatched;
    const mine = allocsOf(j.Namespace, j.ID);
    const live = mine.some((a) => a.ClientStatus === "pending" || a.ClientStatus === "running");
    const pendingEval = evalsOf(j.Namespace, j.ID).some(
      (e) => e.Status === "pending" || e.Status === "blocked",
    );
    if (isParent) j.Status = j.Stop ? "dead" : "running";
    else if (live) j.Status = "running";
    else if (j.Stop || (mine.length > 0 && !pendingEval)) j.Status = "dead";
    else j.Status = "pending";
    return before !== j.Status;
  }

  function touchJob(j: JobRec) {
    if (refreshJobStatus(j)) {
      const i = commit("jobs", [
        {
          Topic: "Job",
          Type: "JobStatusUpdated",
          Key: j.ID,
          Namespace: j.Namespace,
          FilterKeys: [],
          Payload: { Job: jobJson(j) },
        },
      ]);
      j.ModifyIndex = i;
    }
  }

  // ---------- validation ----------

  function validateJob(job: Json): string[] {
    const errs: string[] = [];
    const id = job.ID as string | undefined;
    if (!id) errs.push("Missing job ID");
    else if (id.includes(" ")) errs.push("Job ID contains a space");
    else if (id.includes("\0")) errs.push("Job ID contains a null character");
    const type = job.Type as string;
    if (!["batch", "service", "system", "sysbatch"].includes(type)) errs.push(`Invalid job type: "${type}"`);
    const dcs = job.Datacenters as unknown[];
    if (!Array.isArray(dcs) || dcs.length === 0) errs.push("Missing job datacenters");
    else if (dcs.some((d) => d === "")) errs.push("Job datacenter must be non-empty string");
    const pj = job.ParameterizedJob as Json | undefined | null;
    if (pj) {
      if (type !== "batch" && type !== "sysbatch")
        errs.push('Parameterized job can only be used with "batch" or "sysbatch" scheduler');
      if (
        pj.Payload !== undefined &&
        !["", "optional", "required", "forbidden"].includes(pj.Payload as string)
      )
        errs.push(`Unknown payload requirement: "${String(pj.Payload)}"`);
    }
    const groups = job.TaskGroups as Json[] | undefined;
    if (!Array.isArray(groups) || groups.length === 0) {
      errs.push("Missing job task groups");
      return errs;
    }
    const names = new Set<string>();
    groups.forEach((g, gi) => {
      const gname = (g.Name as string) || "";
      const gerrs: string[] = [];
      if (!gname) gerrs.push(`Job task group ${gi + 1} missing name`);
      else if (names.has(gname)) gerrs.push(`Job task group ${gi + 1} redefines '${gname}' from group ${gi}`);
      names.add(gname);
      if (typeof g.Count === "number" && g.Count < 0) gerrs.push("Task group count can't be negative");
      const rp = g.RestartPolicy as Json | undefined;
      if (rp?.Mode !== undefined && rp.Mode !== "fail" && rp.Mode !== "delay")
        gerrs.push(`Unsupported restart mode: "${String(rp.Mode)}"`);
      const tasks = g.Tasks as Json[] | undefined;
      if (!Array.isArray(tasks) || tasks.length === 0) gerrs.push("Missing tasks for task group");
      for (const [ti, t] of (tasks ?? []).entries()) {
        if (!t.Name) gerrs.push(`Task ${ti + 1} missing name`);
        if (!t.Driver)
          gerrs.push(`Task ${(t.Name as string) || ti + 1} validation failed: Missing task driver`);
        const r = t.Resources as Json | undefined;
        if (r && typeof r.MemoryMB === "number" && r.MemoryMB < 10)
          gerrs.push(
            `Task ${t.Name as string} validation failed: minimum MemoryMB value is 10; got ${r.MemoryMB}`,
          );
      }
      if (gerrs.length) errs.push(`Task group ${gname} validation failed: ${gerrs.join("; ")}`);
    });
    return errs;
  }

  /** The defaults the server fills on register (what `GET /v1/job/:id` then shows). */
  function serverCanonicalize(job: Json): Json {
    const j = structuredClone(job);
    j.Type ??= "service";
    j.Name ??= j.ID;
    j.Priority ??= 50;
    if (!Array.isArray(j.Datacenters) || (j.Datacenters as unknown[]).length === 0) j.Datacenters = ["*"];
    j.NodePool ||= "default";
    j.Region ||= region;
    for (const g of (j.TaskGroups as Json[]) ?? []) {
      g.Count ??= 1;
      for (const t of (g.Tasks as Json[]) ?? []) {
        t.Config ??= {};
        t.KillTimeout ??= 5_000_000_000;
      }
    }
    return j;
  }

  // ---------- scheduling ----------

  function createEval(j: JobRec, triggeredBy: string): EvalRec {
    const e: EvalRec = {
      ID: randomUUID(),
      Namespace: j.Namespace,
      JobID: j.ID,
      Type: j.spec.Type as string,
      TriggeredBy: triggeredBy,
      Status: "pending",
      StatusDescription: "",
      FailedTGAllocs: null,
      BlockedEval: "",
      CreateIndex: 0,
      ModifyIndex: 0,
      CreateTime: nowNs(),
      ModifyTime: nowNs(),
    };
    evals.set(e.ID, e);
    indexUnder(evalsByJob, key(e.Namespace, e.JobID), e);
    const i = commit("evals", [
      {
        Topic: "Evaluation",
        Type: "EvaluationUpdated",
        Key: e.ID,
        Namespace: e.Namespace,
        FilterKeys: [j.ID],
        Payload: { Evaluation: { ...e } },
      },
    ]);
    e.CreateIndex = i;
    e.ModifyIndex = i;
    later(placementDelayMs, () => void schedule(e).catch(() => {}));
    return e;
  }

  async function schedule(e: EvalRec) {
    const j = jobs.get(key(e.Namespace, e.JobID));
    if (!j || j.Stop) {
      e.Status = "complete";
      e.ModifyIndex = commit("evals");
      return;
    }
    const failed: Record<string, Json> = {};
    const toPlace: Array<{ group: Json; idx: number }> = [];
    for (const g of j.spec.TaskGroups as Json[]) {
      if (!nodeReady) {
        // No ready node in the datacenter/pool: nothing is evaluated (the scheduler's metrics).
        failed[g.Name as string] = {
          NodesEvaluated: 0,
          NodesFiltered: 0,
          NodesInPool: 1,
          NodesAvailable: { [datacenter]: 0 },
          ClassFiltered: null,
          ConstraintFiltered: null,
          NodesExhausted: 0,
          ClassExhausted: null,
          DimensionExhausted: null,
          QuotaExhausted: null,
          CoalescedFailures: 0,
        };
        continue;
      }
      const missing = [
        ...new Set((g.Tasks as Json[]).map((t) => t.Driver as string).filter((d) => !drivers.has(d))),
      ];
      const constraints = [
        ...((j.spec.Constraints as DoubleConstraint[] | undefined) ?? []),
        ...((g.Constraints as DoubleConstraint[] | undefined) ?? []),
        ...(g.Tasks as Json[]).flatMap((t) => (t.Constraints as DoubleConstraint[] | undefined) ?? []),
      ];
      const unmet = missing.length ? undefined : firstUnmet(constraints, node);
      if (missing.length || unmet) {
        failed[g.Name as string] = {
          NodesEvaluated: 1,
          NodesFiltered: 1,
          NodesInPool: 1,
          NodesAvailable: { [datacenter]: 1 },
          ClassFiltered: null,
          ConstraintFiltered: { [unmet ? constraintText(unmet) : "missing drivers"]: 1 },
          NodesExhausted: 0,
          ClassExhausted: null,
          DimensionExhausted: null,
          QuotaExhausted: null,
          CoalescedFailures: 0,
        };
        continue;
      }
      const existing = allocsOf(j.Namespace, j.ID).filter(
        (a) => a.TaskGroup === g.Name && a.DesiredStatus === "run",
      );
      const count = (g.Count as number) ?? 1;
      for (let i = existing.length; i < count; i++) toPlace.push({ group: g, idx: i });
    }
    for (const p of toPlace) await placeAlloc(j, p.group, p.idx, e);
    if (Object.keys(failed).length) {
      const blocked: EvalRec = {
        ...e,
        ID: randomUUID(),
        Status: "blocked",
        StatusDescription: "created to place remaining allocations",
        TriggeredBy: "queued-allocs",
        FailedTGAllocs: null,
        CreateTime: nowNs(),
      };
      evals.set(blocked.ID, blocked);
      indexUnder(evalsByJob, key(blocked.Namespace, blocked.JobID), blocked);
      if (!nodeReady) blockedEvals.add(blocked.ID);
      e.FailedTGAllocs = failed;
      e.BlockedEval = blocked.ID;
    }
    e.Status = "complete";
    e.ModifyTime = nowNs();
    e.ModifyIndex = commit("evals", [
      {
        Topic: "Evaluation",
        Type: "EvaluationUpdated",
        Key: e.ID,
        Namespace: e.Namespace,
        FilterKeys: [j.ID],
        Payload: { Evaluation: { ...e } },
      },
    ]);
    touchJob(j);
  }

  function appendEvent(st: { Events: TaskEvent[] }, e: TaskEvent): void {
    st.Events.push(e);
    if (st.Events.length > TASK_EVENT_CAPACITY) st.Events.splice(0, st.Events.length - TASK_EVENT_CAPACITY);
  }

  function taskEvent(type: string, extra: Json = {}): TaskEvent {
    return {
      Type: type,
      Time: nowNs(),
      Message: "",
      DisplayMessage: (extra.DisplayMessage as string) ?? "",
      Details: {},
      ...extra,
    };
  }

  function publishAlloc(a: AllocRec, type = "AllocationUpdated") {
    const i = commit("allocs", [
      {
        Topic: "Allocation",
        Type: type,
        Key: a.ID,
        Namespace: a.Namespace,
        FilterKeys: [a.JobID],
        Payload: { Allocation: allocJson(a) },
      },
    ]);
    a.ModifyIndex = i;
    a.ModifyTime = nowNs();
    const j = jobs.get(key(a.Namespace, a.JobID));
    if (j) touchJob(j);
  }

  function recomputeClientStatus(a: AllocRec) {
    if (a.ClientStatus === "lost") return;
    const states = Object.values(a.TaskStates);
    if (states.some((s) => s.State === "dead" && s.Failed)) {
      a.ClientStatus = "failed";
      a.ClientDescription = "Failed tasks";
    } else if (states.some((s) => s.State === "running")) {
      a.ClientStatus = "running";
      a.ClientDescription = "Tasks are running";
    } else if (states.some((s) => s.State === "pending")) {
      a.ClientStatus = "pending";
      a.ClientDescription = "No tasks have started";
    } else {
      a.ClientStatus = "complete";
      a.ClientDescription = a.stopReason ?? "All tasks have completed";
    }
  }

  async function placeAlloc(j: JobRec, g: Json, idx: number, e: EvalRec) {
    const ports: AllocatedPort[] = [];
    for (const n of (g.Networks as Json[] | undefined) ?? []) {
      for (const p of (n.DynamicPorts as Json[] | undefined) ?? []) {
        ports.push({
          Label: p.Label as string,
          Value: await nextDynamicPort(),
          To: (p.To as number) ?? 0,
          HostIP: hostIp,
        });
      }
      for (const p of (n.ReservedPorts as Json[] | undefined) ?? []) {
        ports.push({
          Label: p.Label as string,
          Value: p.Value as number,
          To: (p.To as number) ?? 0,
          HostIP: hostIp,
        });
      }
    }
    const id = randomUUID();
    const dir = join(root, id);
    const tasks = g.Tasks as Json[];
    const a: AllocRec = {
      ID: id,
      EvalID: e.ID,
      Name: `${j.ID}.${g.Name as string}[${idx}]`,
      Namespace: j.Namespace,
      NodeID: nodeId,
      NodeName: nodeName,
      JobID: j.ID,
      JobType: j.spec.Type as string,
      TaskGroup: g.Name as string,
      DesiredStatus: "run",
      DesiredDescription: "",
      ClientStatus: "pending",
      ClientDescription: "No tasks have started",
      TaskStates: Object.fromEntries(
        tasks.map((t) => [
          t.Name as string,
          {
            State: "pending",
            Failed: false,
            Restarts: 0,
            LastRestart: ZERO_TIME,
            StartedAt: ZERO_TIME,
            FinishedAt: ZERO_TIME,
            Events: [taskEvent("Received", { DisplayMessage: "Task received by client" })],
          },
        ]),
      ),
      AllocatedResources: {
        Tasks: Object.fromEntries(
          tasks.map((t) => {
            const r = (t.Resources as Json | undefined) ?? {};
            return [
              t.Name as string,
              {
                Cpu: { CpuShares: r.CPU ?? 100 },
                Memory: { MemoryMB: r.MemoryMB ?? 300, MemoryMaxMB: r.MemoryMaxMB ?? 0 },
                Networks: null,
                Devices: null,
              },
            ];
          }),
        ),
        Shared: {
          DiskMB: ((g.EphemeralDisk as Json | undefined)?.SizeMB as number) ?? 300,
          Networks: [
            {
              Mode: "host",
              IP: hostIp,
              DynamicPorts: ports.map((p) => ({
                Label: p.Label,
                Value: p.Value,
                To: p.To,
                HostNetwork: "default",
              })),
            },
          ],
          Ports: ports,
        },
      },
      CreateIndex: 0,
      ModifyIndex: 0,
      AllocModifyIndex: 0,
      CreateTime: nowNs(),
      ModifyTime: nowNs(),
      handles: new Map(),
      dir,
    };
    allocs.set(id, a);
    indexUnder(allocsByJob, key(a.Namespace, a.JobID), a);
    mkdirSync(join(dir, "alloc", "logs"), { recursive: true });
    publishAlloc(a, "PlanResult");
    a.CreateIndex = a.ModifyIndex;
    a.AllocModifyIndex = a.ModifyIndex;
    const maxRun = g.MaxRunDuration as number | undefined;
    if (maxRun && maxRun > 0) {
      a.maxRunTimer = setTimeout(() => {
        if (a.DesiredStatus === "run" && (a.ClientStatus === "pending" || a.ClientStatus === "running")) {
          a.stopReason = "allocation exceeded max_run_duration";
          void killAlloc(a, "allocation exceeded max_run_duration");
        }
      }, maxRun / 1e6);
    }
    later(startDelayMs, () => {
      for (const t of tasks) startAllocTask(j, g, a, t);
    });
  }

  function taskEnv(j: JobRec, g: Json, a: AllocRec, t: Json, taskDir: string): Record<string, string> {
    const meta: Record<string, string> = {
      ...((j.spec.Meta as Record<string, string>) ?? {}),
      ...((g.Meta as Record<string, string>) ?? {}),
      ...((t.Meta as Record<string, string>) ?? {}),
    };
    const r = (t.Resources as Json | undefined) ?? {};
    const env: Record<string, string> = {
      // raw_exec/exec/nix: the client's environment minus env.denylist
      // (client/allocrunner/taskrunner/task_dir_hook.go → taskenv.Builder.SetHostEnvvars)
      ...(HOST_ENV_DRIVERS.has(t.Driver as string) ? hostEnv : {}),
      PATH:
        (HOST_ENV_DRIVERS.has(t.Driver as string) ? hostEnv.PATH : undefined) ??
        process.env.PATH ??
        "/usr/bin:/bin",
      NOMAD_ALLOC_DIR: join(a.dir, "alloc"),
      NOMAD_TASK_DIR: taskDir,
      NOMAD_SECRETS_DIR: join(a.dir, t.Name as string, "secrets"),
      NOMAD_ALLOC_ID: a.ID,
      NOMAD_SHORT_ALLOC_ID: a.ID.slice(0, 8),
      NOMAD_ALLOC_NAME: a.Name,
      NOMAD_ALLOC_INDEX: a.Name.replace(/^.*\[(\d+)\]$/, "$1"),
      NOMAD_TASK_NAME: t.Name as string,
      NOMAD_GROUP_NAME: g.Name as string,
      NOMAD_JOB_ID: j.ID,
      NOMAD_JOB_NAME: jobJson(j).Name as string,
      NOMAD_JOB_PARENT_ID: j.ParentID,
      NOMAD_DC: datacenter,
      NOMAD_NAMESPACE: j.Namespace,
      NOMAD_REGION: region,
      NOMAD_CPU_LIMIT: String(r.CPU ?? 100),
      NOMAD_MEMORY_LIMIT: String(r.MemoryMB ?? 300),
      NOMAD_MEMORY_MAX_LIMIT: String(r.MemoryMaxMB ?? 0),
    };
    for (const p of (a.AllocatedResources.Shared as { Ports: AllocatedPort[] }).Ports) {
      env[`NOMAD_PORT_${p.Label}`] = String(p.Value);
      env[`NOMAD_HOST_PORT_${p.Label}`] = String(p.Value);
      env[`NOMAD_IP_${p.Label}`] = p.HostIP;
      env[`NOMAD_ADDR_${p.Label}`] = `${p.HostIP}:${p.Value}`;
    }
    for (const [k, v] of Object.entries(meta)) {
      env[`NOMAD_META_${k}`] = v;
      env[`NOMAD_META_${k.toUpperCase()}`] = v;
    }
    for (const [k, v] of Object.entries((t.Env as Record<string, string>) ?? {}))
      env[k] = interpolate(v, env);
    return env;
  }

  function startAllocTask(j: JobRec, g: Json, a: AllocRec, t: Json) {
    const name = t.Name as string;
    const st = a.TaskStates[name]!;
    if (a.DesiredStatus !== "run" || st.State !== "pending") return;
    const taskDir = join(a.dir, name, "local");
    mkdirSync(taskDir, { recursive: true });
    mkdirSync(join(a.dir, name, "secrets"), { recursive: true });
    appendEvent(
      st,
      taskEvent("Task Setup", {
        Message: "Building Task Directory",
        DisplayMessage: "Building Task Directory",
      }),
    );
    publishAlloc(a);
    const env = taskEnv(j, g, a, t, taskDir);
    const meta = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith("NOMAD_META_")));
    const config = interpolateDeep(t.Config ?? {}, env) as Record<string, unknown>;
    const driver = t.Driver as string;
    const ports = (a.AllocatedResources.Shared as { Ports: AllocatedPort[] }).Ports;
    const info = {
      allocId: a.ID,
      jobId: j.ID,
      parentId: j.ParentID,
      taskName: name,
      driver,
      config,
      env,
      meta,
      ports,
    };
    let behavior = options.runTask?.(info);
    if (!behavior) {
      const wanted = Array.isArray(config.ports) ? (config.ports as string[]) : [];
      const unknown = wanted.find((l) => !ports.some((p) => p.Label === l));
      const argv = argvOf(driver, config);
      const createFailure = containerCreateFailure(driver, config, containerHost);
      if (createFailure !== undefined) behavior = { kind: "driver-failure", message: createFailure };
      else if (unknown !== undefined)
        behavior = { kind: "driver-failure", message: `Port "${unknown}" not found, check network block` };
      else if (argv) behavior = { kind: "exec", argv };
      else if (driver === "raw_exec" || driver === "exec" || driver === "nix")
        behavior = {
          kind: "driver-failure",
          message: 'failed to parse config: missing required field "command"',
        };
      else behavior = { kind: "listen" };
    }
    const ctx: TaskRunContext = { ...info, taskDir, logDir: join(a.dir, "alloc", "logs") };
    // The memory limit the kernel enforces (a cgroup's memory.max): MemoryMB, or MemoryMaxMB with
    // oversubscription on (Nomad: drivers/shared/executor, the task's cgroup limits; the scheduler
    // config's MemoryOversubscriptionEnabled).
    const res = (t.Resources as Json | undefined) ?? {};
    const hardMb =
      options.memoryOversubscription && ((res.MemoryMaxMB as number | undefined) ?? 0) > 0
        ? (res.MemoryMaxMB as number)
        : ((res.MemoryMB as number | undefined) ?? 300);
    let oomKilled = false;
    let memoryWatch: NodeJS.Timeout | undefined;
    const handle = startTask(ctx, behavior, {
      started() {
        if (st.State !== "pending") return;
        st.State = "running";
        st.StartedAt = new Date().toISOString();
        appendEvent(st, taskEvent("Started", { DisplayMessage: "Task started by client" }));
        recomputeClientStatus(a);
        publishAlloc(a);
      },
      exited(exitCode, signal) {
        if (memoryWatch) clearInterval(memoryWatch);
        if (st.State === "dead") return;
        const killed = a.DesiredStatus !== "run" || a.ClientStatus === "lost" || a.stopReason !== undefined;
        appendEvent(
          st,
          taskEvent("Terminated", {
            ExitCode: exitCode,
            Signal: signal,
            Details: {
              exit_code: String(exitCode),
              signal: String(signal),
              oom_killed: oomKilled ? "true" : "false",
            },
            DisplayMessage: `Exit Code: ${exitCode}${signal ? `, Signal: ${signal}` : ""}${oomKilled ? ', Exit Message: "OOM Killed"' : ""}`,
          }),
        );
        if (killed) {
          appendEvent(st, taskEvent("Killed", { DisplayMessage: "Task successfully killed" }));
          st.Failed = false;
        } else if (exitCode !== 0) {
          const rp = (t.RestartPolicy as Json | undefined) ?? (g.RestartPolicy as Json | undefined) ?? {};
          const attempts = (rp.Attempts as number | undefined) ?? 3;
          appendEvent(
            st,
            taskEvent("Not Restarting", {
              FailsTask: true,
              Details: {
                fails_task: "true",
                restart_reason: `Exceeded allowed attempts ${attempts} in interval`,
              },
              DisplayMessage: `Exceeded allowed attempts ${attempts} in interval 24h0m0s and mode is "fail"`,
            }),
          );
          st.Failed = true;
        }
        st.State = "dead";
        st.FinishedAt = new Date().toISOString();
        a.handles.delete(name);
        if (a.maxRunTimer && Object.values(a.TaskStates).every((s) => s.State === "dead"))
          clearTimeout(a.maxRunTimer);
        recomputeClientStatus(a);
        publishAlloc(a);
      },
      driverFailure(message) {
        appendEvent(
          st,
          taskEvent("Driver Failure", {
            DriverError: message,
            FailsTask: true,
            DisplayMessage: message,
            Details: { driver_error: message, fails_task: "true" },
          }),
        );
        appendEvent(
          st,
          taskEvent("Not Restarting", { FailsTask: true, DisplayMessage: "Error was unrecoverable" }),
        );
        st.State = "dead";
        st.Failed = true;
        st.FinishedAt = new Date().toISOString();
        a.handles.delete(name);
        recomputeClientStatus(a);
        publishAlloc(a);
      },
    });
    a.handles.set(name, handle);
    if (handle.rssMb) {
      memoryWatch = setInterval(() => {
        if (closed || st.State === "dead") return clearInterval(memoryWatch);
        if (handle.alive() && handle.rssMb!() > hardMb) {
          clearInterval(memoryWatch);
          oomKilled = true;
          void handle.kill("SIGKILL", 0);
        }
      }, options.memoryPollMs ?? 100);
      memoryWatch.unref();
    }
  }

  async function killAlloc(a: AllocRec, why: string) {
    for (const st of Object.values(a.TaskStates)) {
      if (st.State === "dead") continue;
      appendEvent(st, taskEvent("Killing", { DisplayMessage: why, KillReason: why }));
      if (st.State === "pending") {
        st.State = "dead";
        st.FinishedAt = new Date().toISOString();
      }
    }
    publishAlloc(a);
    const job = jobs.get(key(a.Namespace, a.JobID));
    const graceOf = (taskName: string) => {
      const groups = (job?.spec.TaskGroups as Json[] | undefined) ?? [];
      const t = groups.flatMap((g) => g.Tasks as Json[]).find((x) => x.Name === taskName);
      return Math.min(2_000, ((t?.KillTimeout as number | undefined) ?? 5e9) / 1e6);
    };
    await Promise.all(
      [...a.handles.entries()].map(([name, h]) => {
        const groups = (job?.spec.TaskGroups as Json[] | undefined) ?? [];
        const t = groups.flatMap((g) => g.Tasks as Json[]).find((x) => x.Name === name);
        return h.kill(
          ((t?.KillSignal as NodeJS.Signals | undefined) ?? "SIGINT") as NodeJS.Signals,
          graceOf(name),
        );
      }),
    );
    recomputeClientStatus(a);
    publishAlloc(a);
  }

  function stopJobAllocs(j: JobRec, why: string) {
    for (const a of [...allocsOf(j.Namespace, j.ID)]) {
      if (a.DesiredStatus !== "run") continue;
      a.DesiredStatus = "stop";
      a.DesiredDescription = why;
      if (a.ClientStatus === "pending" || a.ClientStatus === "running") void killAlloc(a, why);
      else publishAlloc(a);
    }
  }

  // ---------- HTTP ----------

  function readBody(req: IncomingMessage): Promise<string> {
    return new Promise((resolve, reject) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
      req.on("error", reject);
    });
  }

  function parseJsonBody(body: string): Json {
    if (body === "") throw new HttpError(400, "Request body is empty");
    try {
      const v = JSON.parse(body) as unknown;
      if (!v || typeof v !== "object" || Array.isArray(v))
        throw new Error("json: cannot unmarshal into Go value");
      return v as Json;
    } catch (e) {
      throw new HttpError(400, (e as Error).message);
    }
  }

  /** Runs a blocking query: `compute` until its index passes `index` or `wait` elapses. */
  async function blocking(
    q: URLSearchParams,
    compute: () => { index: number; body: unknown },
    res: ServerResponse,
    watch: { add(w: () => void): void; delete(w: () => void): void } = waiters,
  ) {
    let out = compute();
    const min = q.get("index");
    if (min !== null && Number(min) > 0) {
      const minIndex = Number(min);
      const waitMs = Math.min(600_000, q.get("wait") ? parseGoDuration(q.get("wait")!) : 300_000);
      const deadline = Date.now() + waitMs;
      while (out.index <= minIndex && Date.now() < deadline && !closed) {
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(t);
            watch.delete(done);
            res.off("close", done);
            resolve();
          };
          const t = setTimeout(done, Math.max(0, deadline - Date.now()));
          watch.add(done);
          // The response closes early only when the client went away.
          res.once("close", done);
        });
        if (res.destroyed) return;
        out = compute();
      }
    }
    sendJson(res, 200, out.body, out.index);
  }

  function sendJson(res: ServerResponse, status: number, body: unknown, idx = index) {
    if (res.headersSent || res.destroyed) return;
    if (loseAnswer.has(res)) {
      res.socket?.destroy();
      return;
    }
    res.writeHead(status, {
      "Content-Type": "application/json",
      "X-Nomad-Index": String(idx),
      "X-Nomad-KnownLeader": "true",
      "X-Nomad-LastContact": "0",
    });
    res.end(JSON.stringify(body));
  }

  function nsOf(q: URLSearchParams): string {
    return q.get("namespace") || "default";
  }

  function getJob(ns: string, id: string): JobRec {
    const j = jobs.get(key(ns, id));
    if (!j) throw new HttpError(404, "job not found");
    return j;
  }

  async function register(q: URLSearchParams, body: string, res: ServerResponse, pathJobId?: string) {
    const args = parseJsonBody(body);
    const job = args.Job as Json | undefined | null;
    if (!job) throw new HttpError(400, "Job must be specified");
    if (job.ID === undefined || job.ID === null) throw new HttpError(400, "Job ID hasn't been provided");
    if (pathJobId !== undefined && job.ID !== pathJobId)
      throw new HttpError(400, "Job ID does not match name");
    const ns = (job.Namespace as string | undefined) || nsOf(q);
    if (!namespaces.has(ns))
      throw new HttpError(500, `job "${String(job.ID)}" is in nonexistent namespace "${ns}"`);
    const spec = serverCanonicalize({ ...job, Namespace: ns });
    const errs = validateJob(spec);
    if (errs.length) throw new HttpError(500, multiError(errs));
    const id = spec.ID as string;
    const existing = jobs.get(key(ns, id));
    if (args.EnforceIndex) {
      const want = Number(args.JobModifyIndex ?? 0);
      if (existing && want === 0)
        throw new HttpError(500, "Enforcing job modify index 0: job already exists");
      if (existing && want !== existing.JobModifyIndex)
        throw new HttpError(
          500,
          `Enforcing job modify index ${want}: job exists with conflicting job modify index: ${existing.JobModifyIndex}`,
        );
      if (!existing && want !== 0)
        throw new HttpError(500, `Enforcing job modify index ${want}: job does not exist`);
    }
    if (existing?.spec.ParameterizedJob && !spec.ParameterizedJob)
      throw new HttpError(500, "cannot update parameterized job to being non-parameterized");
    const rec: JobRec = existing ?? {
      spec,
      ID: id,
      Namespace: ns,
      ParentID: "",
      Dispatched: false,
      DispatchIdempotencyToken: "",
      Status: "pending",
      Stop: false,
      Version: 0,
      SubmitTime: nowNs(),
      CreateIndex: 0,
      ModifyIndex: 0,
      JobModifyIndex: 0,
    };
    if (existing) {
      existing.spec = spec;
      existing.Stop = false;
      existing.Version++;
      existing.SubmitTime = nowNs();
    }
    jobs.set(key(ns, id), rec);
    refreshJobStatus(rec);
    const i = commit("jobs", [
      {
        Topic: "Job",
        Type: "JobRegistered",
        Key: id,
        Namespace: ns,
        FilterKeys: [],
        Payload: { Job: jobJson(rec) },
      },
    ]);
    if (!existing) rec.CreateIndex = i;
    rec.ModifyIndex = i;
    rec.JobModifyIndex = i;
    let evalId = "";
    let evalIndex = 0;
    if (!spec.ParameterizedJob) {
      const e = createEval(rec, "job-register");
      evalId = e.ID;
      evalIndex = e.CreateIndex;
    }
    sendJson(
      res,
      200,
      {
        EvalID: evalId,
        EvalCreateIndex: evalIndex,
        JobModifyIndex: rec.JobModifyIndex,
        Warnings: "",
        Index: index,
        LastContact: 0,
        KnownLeader: false,
      },
      index,
    );
  }

  async function dispatch(q: URLSearchParams, parentId: string, body: string, res: ServerResponse) {
    const args = parseJsonBody(body);
    const ns = nsOf(q);
    const parent = jobs.get(key(ns, parentId));
    if (!parent) throw new HttpError(500, "parameterized job not found");
    const pj = parent.spec.ParameterizedJob as Json | undefined;
    if (!pj || parent.Dispatched)
      throw new HttpError(500, `Specified job "${parentId}" is not a parameterized job`);
    if (parent.Stop) throw new HttpError(500, `Specified job "${parentId}" is stopped`);
    const payload = typeof args.Payload === "string" ? Buffer.from(args.Payload, "base64") : Buffer.alloc(0);
    if (pj.Payload === "required" && payload.length === 0)
      throw new HttpError(500, "Payload is not provided but required by parameterized job");
    if (pj.Payload === "forbidden" && payload.length > 0)
      throw new HttpError(500, "Payload provided but forbidden by parameterized job");
    if (payload.length > 16_384)
      throw new HttpError(500, `Payload exceeds maximum size; ${payload.length} > 16384`);
    const meta = (args.Meta as Record<string, string> | null | undefined) ?? {};
    const required = (pj.MetaRequired as string[] | undefined) ?? [];
    const allowed = new Set([...required, ...((pj.MetaOptional as string[] | undefined) ?? [])]);
    const unpermitted = Object.keys(meta).filter((k) => !allowed.has(k));
    if (unpermitted.length)
      throw new HttpError(
        500,
        `Dispatch request included unpermitted metadata keys: [${unpermitted.join(" ")}]`,
      );
    const missing = required.filter((k) => !(k in meta));
    if (missing.length)
      throw new HttpError(500, `Dispatch did not provide required meta keys: [${missing.join(" ")}]`);
    const token = q.get("idempotency_token") ?? "";
    if (token) {
      const found = [...jobs.values()].find(
        (c) => c.Namespace === ns && c.ParentID === parentId && c.DispatchIdempotencyToken === token,
      );
      if (found) {
        sendJson(
          res,
          200,
          {
            DispatchedJobID: found.ID,
            EvalID: "",
            EvalCreateIndex: 0,
            JobCreateIndex: found.CreateIndex,
            Index: found.ModifyIndex,
          },
          index,
        );
        return;
      }
    }
    const prefix =
      typeof args.IdPrefixTemplate === "string" && args.IdPrefixTemplate ? `${args.IdPrefixTemplate}-` : "";
    const childId = `${parentId}/dispatch-${prefix}${Math.floor(Date.now() / 1000)}-${randomUUID().slice(0, 8)}`;
    const spec = structuredClone(parent.spec);
    spec.ID = childId;
    spec.Name = childId;
    spec.Meta = { ...((spec.Meta as Record<string, string>) ?? {}), ...meta };
    spec.ParentID = parentId;
    const child: JobRec = {
      spec,
      ID: childId,
      Namespace: ns,
      ParentID: parentId,
      Dispatched: true,
      DispatchIdempotencyToken: token,
      Status: "pending",
      Stop: false,
      Version: 0,
      SubmitTime: nowNs(),
      CreateIndex: 0,
      ModifyIndex: 0,
      JobModifyIndex: 0,
    };
    jobs.set(key(ns, childId), child);
    const i = commit("jobs", [
      {
        Topic: "Job",
        Type: "JobRegistered",
        Key: childId,
        Namespace: ns,
        FilterKeys: [],
        Payload: { Job: jobJson(child) },
      },
    ]);
    child.CreateIndex = i;
    child.ModifyIndex = i;
    child.JobModifyIndex = i;
    const e = createEval(child, "job-register");
    sendJson(
      res,
      200,
      {
        DispatchedJobID: childId,
        EvalID: e.ID,
        EvalCreateIndex: e.CreateIndex,
        JobCreateIndex: i,
        Index: index,
      },
      index,
    );
  }

  function deregister(q: URLSearchParams, id: string, res: ServerResponse) {
    const ns = nsOf(q);
    const j = jobs.get(key(ns, id));
    if (!j) {
      sendJson(res, 200, { EvalID: "", EvalCreateIndex: 0, JobModifyIndex: 0, Index: index }, index);
      return;
    }
    const purge = q.get("purge") === "true";
    j.Stop = true;
    stopJobAllocs(
      j,
      purge ? "alloc is being stopped due to job purge" : "alloc is being stopped due to job deregistration",
    );
    let e: EvalRec | undefined;
    if (!(j.spec.ParameterizedJob && !j.Dispatched)) e = createEval(j, "job-deregister");
    if (purge) {
      jobs.delete(key(ns, id));
      commit("jobs", [
        {
          Topic: "Job",
          Type: "JobDeregistered",
          Key: id,
          Namespace: ns,
          FilterKeys: [],
          Payload: { Job: jobJson(j), Deleted: true },
        },
      ]);
    } else {
      refreshJobStatus(j);
      j.ModifyIndex = commit("jobs", [
        {
          Topic: "Job",
          Type: "JobDeregistered",
          Key: id,
          Namespace: ns,
          FilterKeys: [],
          Payload: { Job: jobJson(j) },
        },
      ]);
    }
    sendJson(
      res,
      200,
      {
        EvalID: e?.ID ?? "",
        EvalCreateIndex: e?.CreateIndex ?? 0,
        JobModifyIndex: j.JobModifyIndex,
        Index: index,
      },
      index,
    );
  }

  async function logs(q: URLSearchParams, allocId: string, req: IncomingMessage, res: ServerResponse) {
    const a = allocs.get(allocId);
    if (!a) throw new HttpError(404, `Unknown allocation "${allocId}"`);
    const task = q.get("task");
    if (!task) throw new HttpError(400, "must include task name");
    if (!a.TaskStates[task]) throw new HttpError(400, `unknown task name "${task}"`);
    const type = q.get("type");
    if (type !== "stdout" && type !== "stderr")
      throw new HttpError(400, 'Illegal log type: must be "stdout" or "stderr"');
    const plain = q.get("plain") === "true";
    const follow = q.get("follow") === "true";
    const origin = q.get("origin") ?? "start";
    const offset = Number(q.get("offset") ?? "0");
    const file = join(a.dir, "alloc", "logs", `${task}.${type}.0`);
    const read = () => (existsSync(file) ? readFileSync(file) : Buffer.alloc(0));
    let data = read();
    let pos = origin === "end" ? Math.max(0, data.length - offset) : Math.min(offset, data.length);
    res.writeHead(200, { "Content-Type": plain ? "text/plain" : "application/json" });
    const write = (chunk: Buffer) => {
      if (chunk.length === 0) return;
      if (plain) res.write(chunk);
      else
        res.write(
          JSON.stringify({
            Data: chunk.toString("base64"),
            File: `alloc/logs/${task}.${type}.0`,
            Offset: pos,
          }),
        );
    };
    write(data.subarray(pos));
    pos = data.length;
    if (!follow) {
      res.end();
      return;
    }
    while (!closed && !req.destroyed) {
      const dead = a.TaskStates[task]!.State === "dead";
      data = existsSync(file) && statSync(file).size > pos ? read() : data;
      if (data.length > pos) {
        write(data.subarray(pos));
        pos = data.length;
      }
      if (dead) break;
      await new Promise((r) => setTimeout(r, 25));
    }
    res.end();
  }

  function eventStream(q: URLSearchParams, req: IncomingMessage, res: ServerResponse) {
    const topics = new Map<string, Set<string>>();
    const params = q.getAll("topic");
    if (params.length === 0) topics.set("*", new Set(["*"]));
    for (const t of params) {
      const [topic, k] = t.includes(":")
        ? [t.slice(0, t.indexOf(":")), t.slice(t.indexOf(":") + 1)]
        : [t, "*"];
      if (!topics.has(topic!)) topics.set(topic!, new Set());
      topics.get(topic!)!.add(k || "*");
    }
    const ns = q.get("namespace") || "default";
    res.writeHead(200, { "Content-Type": "application/json" });
    const sub = {
      topics,
      namespace: ns,
      send(events: StreamEventRec[], i: number) {
        if (!res.destroyed) res.write(`${JSON.stringify({ Index: i, Events: events })}\n`);
      },
    };
    const from = Number(q.get("index") ?? "0");
    if (from > 0) {
      const backlog = eventLog.filter((e) => e.Index > from && subscriberWants(sub, e));
      const byIndex = new Map<number, StreamEventRec[]>();
      for (const e of backlog) byIndex.set(e.Index, [...(byIndex.get(e.Index) ?? []), e]);
      for (const [i, evs] of byIndex) sub.send(evs, i);
    }
    subscribers.add(sub);
    const hb = setInterval(() => {
      if (!res.destroyed) res.write("{}\n");
    }, heartbeatMs);
    const end = () => {
      clearInterval(hb);
      subscribers.delete(sub);
    };
    req.on("close", end);
    res.on("close", end);
    closers.add(() => {
      end();
      res.end();
    });
  }

  function takeFault(method: string, path: string) {
    for (const f of faults) {
      if (f.remaining <= 0) continue;
      if (f.match.method && f.match.method !== method) continue;
      if (f.match.path && !f.match.path.test(path)) continue;
      f.remaining--;
      return f;
    }
    return undefined;
  }

  async function route(
    req: IncomingMessage,
    res: ServerResponse,
    body: string,
    path: string,
    q: URLSearchParams,
  ) {
    const method = req.method ?? "GET";
    if (options.token !== undefined || options.aclTokens !== undefined) {
      const t = req.headers["x-nomad-token"];
      const grant =
        typeof t === "string" && t !== ""
          ? t === options.token
            ? { management: true }
            : options.aclTokens?.[t]
          : undefined;
      const need = requirementOf(method, path);
      if (need.kind !== "none" && typeof t === "string" && t !== "" && !grant)
        throw new HttpError(403, "ACL token not found");
      if (!allows(grant, need, nsOf(q) === "*" ? "default" : nsOf(q)))
        throw new HttpError(403, "Permission denied");
    }
    const rq = q.get("region");
    if (rq && rq !== region) throw new HttpError(500, "No path to region");
    const ns = nsOf(q);
    if (ns !== "*" && !namespaces.has(ns) && method === "GET" && path.startsWith("/v1/job"))
      throw new HttpError(404, `namespace "${ns}" not found`);

    if (path === "/v1/status/leader") return sendJson(res, 200, "127.0.0.1:4647");
    if (path === "/v1/agent/self") {
      return sendJson(res, 200, {
        config: {
          Region: region,
          Datacenter: datacenter,
          NodeName: nodeName,
          Version: { Version: version, VersionPrerelease: "", VersionMetadata: "", Revision: "double" },
        },
        member: {
          Name: `${nodeName}.${region}`,
          Addr: hostIp,
          Port: 4648,
          Tags: { build: version, region, dc: datacenter, role: "nomad" },
          Status: "alive",
        },
        stats: {},
      });
    }
    if (path === "/v1/jobs") {
      if (method === "PUT" || method === "POST") return register(q, body, res);
      if (method !== "GET") throw new HttpError(405, "Invalid method");
      const prefix = q.get("prefix") ?? "";
      const withMeta = q.get("meta") === "true";
      let clauses: ReturnType<typeof parseFilter> | undefined;
      try {
        clauses = q.get("filter") ? parseFilter(q.get("filter")!) : undefined;
      } catch (e) {
        if (e instanceof FilterError) throw new HttpError(400, e.message);
        throw e;
      }
      return blocking(
        q,
        () => ({
          index: tableIndex.jobs,
          body: [...jobs.values()]
            .filter((j) => (ns === "*" || j.Namespace === ns) && j.ID.startsWith(prefix))
            .filter((j) => !clauses || matchesFilter(clauses, jobJson(j)))
            .sort((x, y) => (x.ID < y.ID ? -1 : 1))
            .map((j) => jobStub(j, withMeta)),
        }),
        res,
      );
    }
    if (path === "/v1/allocations" && method === "GET") {
      const prefix = q.get("prefix") ?? "";
      return blocking(
        q,
        () => ({
          index: tableIndex.allocs,
          body: [...allocs.values()].filter((a) => a.ID.startsWith(prefix)).map(allocJson),
        }),
        res,
      );
    }
    if (path.startsWith("/v1/allocation/") && method === "GET") {
      const id = path.slice("/v1/allocation/".length);
      return blocking(
        q,
        () => {
          const a = allocs.get(id);
          if (!a) throw new HttpError(404, "alloc not found");
          return { index: a.ModifyIndex, body: allocJson(a) };
        },
        res,
        allocWatch(id),
      );
    }
    if (path.startsWith("/v1/evaluation/") && method === "GET") {
      const e = evals.get(path.slice("/v1/evaluation/".length));
      if (!e) throw new HttpError(404, "eval not found");
      return sendJson(res, 200, e, e.ModifyIndex);
    }
    if (path === "/v1/event/stream" && method === "GET") return eventStream(q, req, res);
    if (path.startsWith("/v1/client/fs/cat/") && method === "GET") {
      const a = allocs.get(path.slice("/v1/client/fs/cat/".length));
      if (!a) throw new HttpError(404, "Unknown allocation");
      const rel = q.get("path") ?? "";
      const file = join(a.dir, rel);
      if (!rel || !file.startsWith(`${a.dir}/`) || !existsSync(file) || statSync(file).isDirectory())
        throw new HttpError(400, `stat ${rel}: no such file or directory`);
      res.writeHead(200, { "Content-Type": "text/plain" });
      res.end(readFileSync(file));
      return;
    }
    if (path.startsWith("/v1/client/allocation/") && path.endsWith("/signal")) {
      if (method !== "POST" && method !== "PUT") throw new HttpError(405, "Invalid method");
      const a = allocs.get(path.slice("/v1/client/allocation/".length, -"/signal".length));
      if (!a) throw new HttpError(404, "Unknown allocation");
      const req = JSON.parse(body || "{}") as { Signal?: string; Task?: string };
      const sig = req.Signal ?? "";
      if (!/^SIG[A-Z0-9]+$/.test(sig)) throw new HttpError(400, `invalid signal '${sig}'`);
      const targets = req.Task ? [a.handles.get(req.Task)] : [...a.handles.values()];
      if (req.Task && !targets[0])
        throw new HttpError(400, `Failed to signal task: ${req.Task}, err: task not found`);
      for (const h of targets) {
        if (!h?.alive() || !h.signal?.(sig as NodeJS.Signals))
          throw new HttpError(500, `Failed to signal task: ${req.Task ?? "(all)"}, err: task not running`);
      }
      return sendJson(res, 200, {});
    }
    if (path.startsWith("/v1/client/fs/logs/") && method === "GET")
      return logs(q, path.slice("/v1/client/fs/logs/".length), req, res);
    if (path.startsWith("/v1/job/")) {
      const rest = path.slice("/v1/job/".length);
      if (rest.endsWith("/dispatch")) {
        if (method !== "PUT" && method !== "POST") throw new HttpError(405, "Invalid method");
        return dispatch(q, rest.slice(0, -"/dispatch".length), body, res);
      }
      if (rest.endsWith("/allocations")) {
        if (method !== "GET") throw new HttpError(405, "Invalid method");
        const id = rest.slice(0, -"/allocations".length);
        // Like Nomad: the answer carries the allocs table index, so any allocation change
        // answers a blocking query (clients re-check and block again).
        return blocking(
          q,
          () => ({
            index: tableIndex.allocs,
            body: [...allocsOf(ns, id)].sort((x, y) => y.CreateIndex - x.CreateIndex).map(allocJson),
          }),
          res,
        );
      }
      if (rest.endsWith("/evaluations")) {
        const id = rest.slice(0, -"/evaluations".length);
        return blocking(
          q,
          () => ({
            index: tableIndex.evals,
            body: [...evalsOf(ns, id)].sort((x, y) => y.CreateIndex - x.CreateIndex),
          }),
          res,
        );
      }
      if (method === "GET") {
        return blocking(
          q,
          () => {
            const j = getJob(ns, rest);
            return { index: j.ModifyIndex, body: jobJson(j) };
          },
          res,
        );
      }
      if (method === "DELETE") return deregister(q, rest, res);
      if (method === "PUT" || method === "POST") return register(q, body, res, rest);
      throw new HttpError(405, "Invalid method");
    }
    throw new HttpError(404, "Invalid URL path");
  }

  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const u = new URL(req.url ?? "/", "http://double");
      const path = decodeURIComponent(u.pathname);
      requests.push({ method: req.method ?? "", path, query: u.searchParams, headers: req.headers, body });
      const fault = takeFault(req.method ?? "", path);
      if (fault?.kind === "drop") {
        req.socket.destroy();
        return;
      }
      if (fault?.kind === "drop-after") loseAnswer.add(res);
      if (fault?.kind === "fail") {
        res.writeHead(fault.status, { "Content-Type": "text/plain" });
        res.end(fault.body);
        return;
      }
      try {
        await route(req, res, body, path, u.searchParams);
      } catch (e) {
        const status = e instanceof HttpError ? e.status : 500;
        if (!res.headersSent && !res.destroyed) {
          res.writeHead(status, { "Content-Type": "text/plain" });
          res.end((e as Error).message);
        }
      }
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, hostIp, resolve));
  const url = `http://${hostIp}:${(server.address() as AddressInfo).port}`;

  return {
    url,
    requests,
    jobs: () =>
      [...jobs.values()].map((j) => ({
        ID: j.ID,
        Namespace: j.Namespace,
        ParentID: j.ParentID,
        Status: j.Status,
        Stop: j.Stop,
        Meta: (j.spec.Meta as Record<string, string>) ?? {},
        spec: structuredClone(j.spec),
      })),
    allocations: () => [...allocs.values()].map((a) => allocJson(a) as never),
    liveTasks: () =>
      [...allocs.values()].reduce((n, a) => n + [...a.handles.values()].filter((h) => h.alive()).length, 0),
    failNext(count, status = 500, body = "injected failure", match = {}) {
      faults.push({ kind: "fail", remaining: count, status, body, match });
    },
    dropNext(count, match = {}) {
      faults.push({ kind: "drop", remaining: count, status: 0, body: "", match });
    },
    loseAnswerNext(count, match = {}) {
      faults.push({ kind: "drop-after", remaining: count, status: 0, body: "", match });
    },
    async loseAllocation(allocId) {
      const a = allocs.get(allocId);
      if (!a) throw new Error(`no allocation ${allocId}`);
      a.ClientStatus = "lost";
      a.ClientDescription = "alloc is lost since its node is down";
      a.DesiredStatus = "stop";
      a.DesiredDescription = "alloc is lost since its node is down";
      await Promise.all([...a.handles.values()].map((h) => h.kill("SIGKILL", 0)));
      a.ClientStatus = "lost";
      publishAlloc(a);
      // Nomad places a replacement for a lost allocation whatever the reschedule policy says,
      // unless the group's disconnect block has replace = false (nomad/structs/structs.go
      // TaskGroup.Replace; scheduler/reconciler). The replacement runs the same job again.
      const j = jobs.get(key(a.Namespace, a.JobID));
      const g = (j?.spec.TaskGroups as Json[] | undefined)?.find((x) => x.Name === a.TaskGroup);
      const replace = (g?.Disconnect as Json | undefined)?.Replace !== false;
      if (j && !j.Stop && replace) createEval(j, "node-update");
    },
    setPlacementDelay(ms) {
      placementDelayMs = ms;
    },
    setNodeReady(ready) {
      nodeReady = ready;
      if (!ready) return;
      for (const id of [...blockedEvals]) {
        blockedEvals.delete(id);
        const b = evals.get(id);
        if (b?.Status !== "blocked") continue;
        b.Status = "pending";
        b.ModifyIndex = commit("evals");
        later(placementDelayMs, () => void schedule(b).catch(() => {}));
      }
    },
    addTaskEvent(allocId, task, type, displayMessage = "") {
      const a = allocs.get(allocId);
      const st = a?.TaskStates[task];
      if (!a || !st) throw new Error(`no task ${task} in allocation ${allocId}`);
      appendEvent(st, taskEvent(type, { DisplayMessage: displayMessage }));
      publishAlloc(a);
    },
    async waitFor(check, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!check()) {
        if (Date.now() > deadline) throw new Error(`nomad double: condition not met within ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(t);
            waiters.delete(done);
            resolve();
          };
          const t = setTimeout(done, 50);
          waiters.add(done);
        });
      }
    },
    async close() {
      closed = true;
      for (const t of timers) clearTimeout(t);
      for (const c of closers) c();
      await Promise.all(
        [...allocs.values()].flatMap((a) => {
          if (a.maxRunTimer) clearTimeout(a.maxRunTimer);
          return [...a.handles.values()].map((h) => h.kill("SIGKILL", 0));
        }),
      );
      for (const w of [...waiters]) w();
      for (const set of [...allocWaiters.values()]) for (const w of [...set]) w();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(root, { recursive: true, force: true });
    },
  };
}
