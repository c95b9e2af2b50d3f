import { match } from "ts-pattern";
import { z } from "zod";
import { milliseconds, seconds } from "../duration.js";
import { assertNoSecrets } from "./guards.js";
import { Constraint, type Job, type Task } from "./job.js";
import { checkWorkerDriver, WorkerDriver } from "./worker-driver.js";
import { driverConfig } from "./worker-driver-config.js";
import { defaultWorkspace, nomadVar, WORKER_ENV } from "./worker-env.js";
import { META } from "./worker-names.js";
import { taskResources, WorkerResources, WorkerSandbox } from "./worker-resources.js";

/**
 * A one-shot command in a fresh allocation of a worker's image: a plain batch job (Count 1) whose
 * task's exit code and logs are the result. Used for scoring (hidden tests in a sandbox the agent
 * never touched). Each exec is a new allocation: nothing carries over between two execs.
 */

export const EXEC_GROUP = "exec";
export const EXEC_TASK = "exec";

/**
 * The shell prelude. It enters the workspace (the image's /workspace in a container, the
 * allocation dir otherwise, where it first copies FLAKEGYM_SNAPSHOT_DIR if that is set), then the
 * working directory, and runs the command. Command and cwd arrive base64 encoded as $1/$2 so
 * Nomad's interpolation of args never touches them; the prelude itself has no `${...}` for the
 * same reason.
 */
export const EXEC_PRELUDE = [
  "set -e",
  'ws="$FLAKEGYM_WORKSPACE"',
  'if [ -z "$ws" ]; then ws="$NOMAD_ALLOC_DIR/workspace"; fi',
  'mkdir -p "$ws"',
  'if [ -n "$FLAKEGYM_SNAPSHOT_DIR" ] && [ -z "$(ls -A "$ws")" ]; then cp -a "$FLAKEGYM_SNAPSHOT_DIR/." "$ws/"; fi',
  'cd "$ws"',
  'dir="$(printf %s "$2" | base64 -d)"',
  'if [ -n "$dir" ]; then cd "$dir"; fi',
  'cmd="$(printf %s "$1" | base64 -d)"',
  "set +e",
  'exec sh -c "$cmd"',
].join("\n");

export const ExecJobOptions = z
  .object({
    jobId: z.string().min(1),
    runId: z.string().min(1),
    taskId: z.string().min(1),
    trajectoryId: z.string().min(1),
    profile: z.string().min(1),
    driver: WorkerDriver,
    command: z.string().min(1).describe("shell command (run by /bin/sh -c)"),
    cwd: z.string().default("").describe("directory to run in, relative to the workspace or absolute"),
    env: z.record(z.string(), z.string()).default({}),
    namespace: z.string().optional(),
    region: z.string().optional(),
    datacenters: z.array(z.string().min(1)).default(["*"]),
    nodePool: z.string().optional(),
    constraints: z.array(Constraint).default([]),
    resources: WorkerResources.default(WorkerResources.parse({})),
    sandbox: WorkerSandbox.default(WorkerSandbox.parse({})),
    workspaceDir: z
      .string()
      .optional()
      .describe("where the command runs (default: /workspace in containers, the allocation dir otherwise)"),
    snapshotDir: z.string().optional().describe("raw_exec/nix: copied into an empty workspace first"),
    maxRunMs: z.number().int().positive().optional(),
    expiresAtMs: z.number().int().positive(),
  })
  .strict();
export type ExecJobOptions = z.infer<typeof ExecJobOptions>;
export type ExecJobInput = z.input<typeof ExecJobOptions>;

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

/** The shell each driver runs the prelude with. */
function shellOf(d: WorkerDriver): string {
  return match(d)
    .with({ driver: "docker" }, { driver: "podman" }, { driver: "raw_exec" }, () => "/bin/sh")
    .with({ driver: "nix" }, () => "sh")
    .exhaustive();
}

export function buildExecJob(input: ExecJobInput): Job {
  const r = ExecJobOptions.safeParse(input);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new TypeError(`exec job: option '${i.path.join(".")}': ${i.message}`);
  }
  const o = r.data;
  assertNoSecrets(o.env, "exec env");
  checkWorkerDriver(o.driver);
  const run = {
    command: shellOf(o.driver),
    args: ["-c", EXEC_PRELUDE, "flakegym-exec", b64(o.command), b64(o.cwd)],
  };
  const settings = {
    [WORKER_ENV.workspace]: o.workspaceDir ?? defaultWorkspace(o.driver),
    ...(o.snapshotDir ? { [WORKER_ENV.snapshotDir]: o.snapshotDir } : {}),
    HOME: `${nomadVar("NOMAD_TASK_DIR")}/home`,
  };
  const env = { ...o.env, ...settings };
  const config = driverConfig(o.driver, o.sandbox, { settings: env, run, diskMb: o.resources.diskMb });
  // An exec task serves no port.
  delete config.ports;
  const task: Task = {
    Name: EXEC_TASK,
    Driver: o.driver.driver,
    Config: config,
    Env: env,
    Resources: taskResources(o.resources),
    KillTimeout: seconds(5),
    LogConfig: { MaxFiles: 1, MaxFileSizeMB: 50 },
  };
  return {
    ID: o.jobId,
    Name: o.jobId,
    Type: "batch",
    ...(o.namespace ? { Namespace: o.namespace } : {}),
    ...(o.region ? { Region: o.region } : {}),
    Datacenters: o.datacenters,
    ...(o.nodePool ? { NodePool: o.nodePool } : {}),
    Meta: {
      [META.run]: o.runId,
      [META.task]: o.taskId,
      [META.trajectory]: o.trajectoryId,
      [META.profile]: o.profile,
      [META.kind]: "exec",
      [META.expires]: String(o.expiresAtMs),
    },
    ...(o.constraints.length ? { Constraints: o.constraints } : {}),
    TaskGroups: [
      {
        Name: EXEC_GROUP,
        Count: 1,
        RestartPolicy: { Attempts: 0, Mode: "fail" },
        ReschedulePolicy: { Attempts: 0, Unlimited: false },
        EphemeralDisk: { SizeMB: o.resources.diskMb },
        Disconnect: { Replace: false },
        ...(o.maxRunMs ? { MaxRunDuration: milliseconds(o.maxRunMs) } : {}),
        Tasks: [task],
      },
    ],
  };
}
