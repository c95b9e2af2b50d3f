import { match } from "ts-pattern";
import { z } from "zod";
import { hours, milliseconds, seconds } from "../duration.js";
import { assertNoSecrets, assertRoutableUrl } from "./guards.js";
import { Constraint, type Job, type Task } from "./job.js";
import { checkNetworkMode, DEFAULT_WORKER_NETWORK } from "./network-mode.js";

/**
 * The Cline worker as a Nomad job: one parameterized batch job per (run, task, image), one
 * dispatch per worker (see docs/nomad.md, "Job shape"). Pure: options in, job out.
 */

/** Meta keys flakegym sets on every job it creates (`NOMAD_META_<key>` inside the task). */
export const META = {
  run: "flakegym_run",
  task: "flakegym_task",
  trajectory: "flakegym_trajectory",
  attempt: "flakegym_attempt",
  profile: "flakegym_profile",
  image: "flakegym_image",
  kind: "flakegym_kind",
  /** The worker's own gateway route (per trajectory): a dispatch meta, so parents stay shared. */
  policyUrl: "flakegym_policy_url",
  /** The worker's core token (per dispatch): the supervisor's gate admits only calls carrying it. */
  coreToken: "flakegym_core_token",
  /** Unix ms after which nobody can still be using the job: the orphan sweep may purge it. */
  expires: "flakegym_expires",
  /** raw_exec: the trajectory's own fork, copied into the workspace (a dispatch meta, so parents stay shared). */
  snapshotDir: "flakegym_snapshot_dir",
} as const;

/** Every flakegym job id starts with this (the orphan sweep lists by it). */
export const JOB_ID_PREFIX = "flakegym-";
export const GRPC_PORT_LABEL = "grpc";
/** A second dynamic port for cline-host (its gRPC bridge to the core; never published). */
export const HOST_PORT_LABEL = "hostbridge";
export const WORKER_GROUP = "worker";
export const WORKER_TASK = "worker";
/** The Cline core's default gRPC port; inside a container the core listens there. */
export const DEFAULT_CONTAINER_GRPC_PORT = 26040;

/**
 * The worker's settings: the environment contract of the image entrypoint `flakegym-worker`
 * (nix/worker-entrypoint.nix): without arguments it starts cline-host on FLAKEGYM_HOST_PORT and
 * cline-core serving gRPC on 0.0.0.0:FLAKEGYM_CORE_PORT, in FLAKEGYM_WORKSPACE, with
 * FLAKEGYM_CONFIG_DIR and HOME = FLAKEGYM_HOME. Nomad interpolates its variables in the values.
 * FLAKEGYM_POLICY_BASE_URL records the gateway URL the runner gives the core. With
 * FLAKEGYM_CORE_TOKEN set, the supervisor serves 0.0.0.0:FLAKEGYM_CORE_PORT as a token gate and the
 * core listens on the task's loopback behind it.
 */
export const WORKER_ENV = {
  corePort: "FLAKEGYM_CORE_PORT",
  hostPort: "FLAKEGYM_HOST_PORT",
  workspace: "FLAKEGYM_WORKSPACE",
  configDir: "FLAKEGYM_CONFIG_DIR",
  home: "FLAKEGYM_HOME",
  snapshotDir: "FLAKEGYM_SNAPSHOT_DIR",
  policyBaseUrl: "FLAKEGYM_POLICY_BASE_URL",
  agent: "FLAKEGYM_AGENT",
  coreToken: "FLAKEGYM_CORE_TOKEN",
} as const;

/** Where a snapshot image keeps its work tree (the agent edits it in the container's own layer). */
export const CONTAINER_WORKSPACE = "/workspace";

const DIGEST_REF = /@sha256:[0-9a-f]{64}$/;

const ImageRef = z
  .string()
  .min(1)
  .describe("image reference; pin it by digest (name@sha256:...) so every worker runs the same bytes");

const ContainerCommon = {
  image: ImageRef,
  allowMutableTag: z
    .boolean()
    .default(false)
    .describe("accept a tag instead of a digest (local development with a loaded image)"),
  command: z.string().optional().describe("override the image's entrypoint command"),
  args: z.array(z.string()).default([]).describe("arguments for the entrypoint"),
  networkMode: z
    .string()
    .default(DEFAULT_WORKER_NETWORK)
    .describe(
      "container network whose egress reaches only the policy gateway (the operator creates it; host, bridge, none and another container's namespace are refused)",
    ),
  containerPort: z
    .number()
    .int()
    .positive()
    .default(DEFAULT_CONTAINER_GRPC_PORT)
    .describe("port the core listens on inside the container"),
};

export const DockerDriver = z
  .object({
    driver: z.literal("docker"),
    ...ContainerCommon,
    runtime: z
      .string()
      .optional()
      .describe('OCI runtime, e.g. "runsc" for gVisor (must be in the client\'s allow_runtimes)'),
  })
  .strict();

export const PodmanDriver = z
  .object({
    driver: z.literal("podman"),
    ...ContainerCommon,
  })
  .strict();

export const NixDriver = z
  .object({
    driver: z.literal("nix"),
    flake: z
      .string()
      .regex(/#./, "expected a flake output reference like <flake-ref>#<output>")
      .describe("flake output holding the worker (only its closure is mounted into the task)"),
    command: z.string().min(1).describe("program on the output's bin/ to run, e.g. flakegym-worker"),
    args: z.array(z.string()).default([]),
    extraPackages: z
      .array(z.string())
      .default(["#coreutils", "#bash"])
      .describe("more packages for the task's profile: env and sh run the worker's preparation"),
  })
  .strict();

export const RawExecDriver = z
  .object({
    driver: z.literal("raw_exec"),
    command: z.string().min(1).describe("absolute path of the program on the client"),
    args: z.array(z.string()).default([]),
    allowUnisolated: z
      .boolean()
      .default(false)
      .describe(
        "accept that raw_exec isolates nothing (see RAW_EXEC_MISSING_ISOLATION): trusted workloads on a dev agent only; refused otherwise",
      ),
  })
  .strict()
  .describe("no isolation at all: only for a dev agent and the real-agent test suite");

/**
 * What raw_exec does not isolate (Nomad's raw_exec runs the task as the client's user, with the
 * host's filesystem, network and process table): why a hostile workload is refused on it.
 */
export const RAW_EXEC_MISSING_ISOLATION = [
  "no user separation (every worker runs as the Nomad client's user)",
  "no filesystem view of its own (other trajectories' workspaces and tokens, the runner's run directories and the catalog's hidden tests are readable)",
  "no network namespace (the core listens on the node's loopback, reachable by every process there, and egress is open)",
  "no process isolation (/proc/<pid>/environ of the Nomad client and of other workers is readable)",
] as const;

export const WorkerDriver = z.discriminatedUnion("driver", [
  DockerDriver,
  PodmanDriver,
  NixDriver,
  RawExecDriver,
]);
export type WorkerDriver = z.infer<typeof WorkerDriver>;
export type WorkerDriverInput = z.input<typeof WorkerDriver>;

/**
 * Memory of one Cline core and its host bridge, measured (FACTS §6, docs/cline.md): core RSS
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

function checkImage(d: { image: string; allowMutableTag: boolean }): void {
  if (!d.allowMutableTag && !DIGEST_REF.test(d.image)) {
    throw new TypeError(
      `worker image '${d.image}' is not pinned by digest: reference it as name@sha256:<digest> ` +
        "(see docs/nomad.md, Image publishing), or set allowMutableTag for a locally loaded image",
    );
  }
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

/** A Nomad runtime variable reference, `${name}`, interpolated by Nomad in env and driver config. */
export function nomadVar(name: string): string {
  return "$" + `{${name}}`;
}

/**
 * Outside a container (raw_exec, nix) nothing provides the workspace: this shell step creates the
 * worker's directories, copies FLAKEGYM_SNAPSHOT_DIR into an empty workspace, then runs "$@".
 * Written without `${...}` so Nomad's interpolation of args leaves it alone.
 */
export const WORKSPACE_PREP = [
  "set -e",
  'mkdir -p "$FLAKEGYM_WORKSPACE" "$FLAKEGYM_CONFIG_DIR" "$FLAKEGYM_HOME"',
  'if [ -n "$FLAKEGYM_SNAPSHOT_DIR" ] && [ -z "$(ls -A "$FLAKEGYM_WORKSPACE")" ]; then cp -a "$FLAKEGYM_SNAPSHOT_DIR/." "$FLAKEGYM_WORKSPACE/"; fi',
  'exec "$@"',
].join("\n");

/**
 * Non-image drivers (raw_exec, exec, nix) start a task with the Nomad client's own environment
 * minus a short denylist of Nomad's, Consul's, Vault's and cloud tokens: model API keys, the
 * operator's credentials and anything else the client was started with pass (Nomad:
 * client/allocrunner/taskrunner/task_dir_hook.go `setEnvvars` calls `SetHostEnvvars` unless the
 * driver's FS isolation is "image"; client/taskenv/env.go `SetHostEnvvars`;
 * command/agent/host/host.go `DefaultEnvDenyList`). This step clears it: the worker runs under
 * `env -i` with the task's PATH (a search path, no secret) and the allowlisted names only.
 * Written without `${...}` so Nomad's interpolation of args leaves it alone.
 */
export const CLEAR_ENV = 'exec env -i PATH="$PATH" "$@"';

/** Nomad runtime variables a worker's processes keep (every other NOMAD_* is dropped too). */
export function nomadRuntimeAllowlist(portLabels: readonly string[]): Record<string, string> {
  const names = [
    "NOMAD_ALLOC_DIR",
    "NOMAD_TASK_DIR",
    "NOMAD_ALLOC_ID",
    "NOMAD_JOB_ID",
    `NOMAD_META_${META.trajectory}`,
    ...portLabels.flatMap((l) => [`NOMAD_IP_${l}`, `NOMAD_PORT_${l}`, `NOMAD_ADDR_${l}`]),
  ];
  return Object.fromEntries(names.map((n) => [n, nomadVar(n)]));
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The complete environment of a worker's processes on a non-image driver: the allowlist, nothing
 * inherited. Pure; `envArgv` turns it into the `sh -c CLEAR_ENV` prefix.
 */
export function workerEnvironment(
  env: Readonly<Record<string, string>>,
  portLabels: readonly string[],
): Record<string, string> {
  for (const k of Object.keys(env)) {
    if (!ENV_NAME.test(k)) throw new TypeError(`worker env: '${k}' is not an environment variable name`);
  }
  return { LANG: "C.UTF-8", ...nomadRuntimeAllowlist(portLabels), ...env };
}

/** `sh -c CLEAR_ENV flakegym-env K=V ... <argv>`: runs argv with exactly `env` (and PATH). */
export function envArgv(env: Readonly<Record<string, string>>, argv: readonly string[]): string[] {
  return ["-c", CLEAR_ENV, "flakegym-env", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv];
}

/**
 * Entrypoint and arguments of a container task. An override (the exec shell) replaces the image's
 * entrypoint (`flakegym-worker`).
 */
function containerArgv(
  c: { command?: string | undefined; args: readonly string[] },
  override?: { command: string; args: readonly string[] },
): Record<string, unknown> {
  if (override) return { entrypoint: [override.command], args: [...override.args] };
  return { ...(c.command ? { command: c.command } : {}), ...(c.args.length ? { args: [...c.args] } : {}) };
}

/**
 * The driver's own `Config` block (lowercase keys), with the sandbox settings it supports.
 * On non-image drivers (raw_exec, nix) the task runs under `env -i` with `settings` and the Nomad
 * runtime variables of `portLabels` only (see CLEAR_ENV); containers get `settings` as the task's
 * Env and nothing of the client's. `run` replaces what the task runs (the exec job's shell).
 */
export function driverConfig(
  d: WorkerDriver,
  sandbox: WorkerSandbox,
  o: {
    settings: Readonly<Record<string, string>>;
    portLabels?: readonly string[];
    run?: { command: string; args: readonly string[] };
    /** The job's disk (MB): docker's writable layer is capped at it (`writableLayerQuota`). */
    diskMb?: number;
  },
): Record<string, unknown> {
  const allowed = workerEnvironment(o.settings, o.portLabels ?? []);
  const tmpfsBytes = sandbox.tmpfsMb * 1024 * 1024;
  const prep = (command: string, args: readonly string[]) => [
    "-c",
    WORKSPACE_PREP,
    "flakegym-prep",
    command,
    ...args,
  ];
  return match(d)
    .with({ driver: "docker" }, (c) => ({
      image: c.image,
      ...containerArgv(c, o.run),
      ports: [GRPC_PORT_LABEL],
      network_mode: c.networkMode,
      ...(c.runtime ? { runtime: c.runtime } : {}),
      ...writableLayerQuota(sandbox, o.diskMb),
      privileged: false,
      cap_drop: ["ALL"],
      security_opt: ["no-new-privileges"],
      readonly_rootfs: sandbox.readonlyRootfs,
      mount: [{ type: "tmpfs", target: "/tmp", readonly: false, tmpfs_options: { size: tmpfsBytes } }],
      pids_limit: sandbox.pidsLimit,
    }))
    .with({ driver: "podman" }, (c) => ({
      image: c.image,
      ...containerArgv(c, o.run),
      ports: [GRPC_PORT_LABEL],
      network_mode: c.networkMode,
      privileged: false,
      // every capability dropped; the podman driver has no `security_opt` (no-new-privileges) key
      cap_drop: ["ALL"],
      readonly_rootfs: sandbox.readonlyRootfs,
      tmpfs: ["/tmp"],
      pids_limit: sandbox.pidsLimit,
    }))
    .with({ driver: "nix" }, (c) => {
      const inner = o.run ? ["sh", ...o.run.args] : ["sh", ...prep(c.command, c.args)];
      return {
        packages: [c.flake, ...c.extraPackages],
        command: "sh",
        args: envArgv(allowed, inner),
        pid_mode: "private",
        ipc_mode: "private",
      };
    })
    .with({ driver: "raw_exec" }, (c) => {
      const inner = o.run ? [o.run.command, ...o.run.args] : ["/bin/sh", ...prep(c.command, c.args)];
      return { command: "/bin/sh", args: envArgv(allowed, inner) };
    })
    .exhaustive();
}

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

/** The worker's workspace: the image's /workspace in containers, the allocation dir otherwise. */
export function defaultWorkspace(d: WorkerDriver): string {
  return match(d)
    .with({ driver: "docker" }, { driver: "podman" }, () => CONTAINER_WORKSPACE)
    .with({ driver: "nix" }, { driver: "raw_exec" }, () => `${nomadVar("NOMAD_ALLOC_DIR")}/workspace`)
    .exhaustive();
}

/** Settings every worker task gets (see WORKER_ENV). */
export function workerSettings(o: {
  driver: WorkerDriver;
  policyBaseUrl?: string | undefined;
  agent: boolean;
  workspaceDir?: string | undefined;
  snapshotDir?: string | undefined;
  snapshotDirFromDispatch?: boolean | undefined;
}): Record<string, string> {
  return {
    [WORKER_ENV.corePort]: nomadVar(`NOMAD_PORT_${GRPC_PORT_LABEL}`),
    [WORKER_ENV.hostPort]: nomadVar(`NOMAD_PORT_${HOST_PORT_LABEL}`),
    [WORKER_ENV.workspace]: o.workspaceDir ?? defaultWorkspace(o.driver),
    [WORKER_ENV.configDir]: `${nomadVar("NOMAD_ALLOC_DIR")}/cline`,
    [WORKER_ENV.home]: `${nomadVar("NOMAD_TASK_DIR")}/home`,
    ...(o.snapshotDirFromDispatch
      ? { [WORKER_ENV.snapshotDir]: nomadVar(`NOMAD_META_${META.snapshotDir}`) }
      : o.snapshotDir
        ? { [WORKER_ENV.snapshotDir]: o.snapshotDir }
        : {}),
    ...(o.policyBaseUrl ? { [WORKER_ENV.policyBaseUrl]: nomadVar(`NOMAD_META_${META.policyUrl}`) } : {}),
    // The dispatch's token; the supervisor gates the core's gRPC with it. A per-worker random
    // value, not a credential of anything else: it lives in the dispatch's meta.
    ...(o.policyBaseUrl ? { [WORKER_ENV.coreToken]: nomadVar(`NOMAD_META_${META.coreToken}`) } : {}),
    [WORKER_ENV.agent]: o.agent ? "1" : "0",
  };
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

function imageOf(d: WorkerDriver): string {
  return match(d)
    .with({ driver: "docker" }, { driver: "podman" }, (c) => c.image)
    .with({ driver: "nix" }, (c) => c.flake)
    .with({ driver: "raw_exec" }, (c) => c.command)
    .exhaustive();
}

/** Validates what every worker-image job needs: a pinned image; raw_exec only when explicitly allowed. */
export function checkWorkerDriver(d: WorkerDriver): void {
  if (d.driver === "docker" || d.driver === "podman") {
    checkImage(d);
    checkNetworkMode(d.networkMode);
  }
  if (d.driver === "raw_exec" && !d.allowUnisolated) {
    throw new TypeError(
      "the raw_exec driver cannot hold an agent's workload: it has " +
        RAW_EXEC_MISSING_ISOLATION.join("; ") +
        ". Use docker (runtime runsc), podman or nix, or set allowUnisolated (FLAKEGYM_NOMAD_ALLOW_UNISOLATED=1) " +
        "for trusted workloads on a dev agent (docs/nomad.md, Isolation)",
    );
  }
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
