import { match } from "ts-pattern";
import { z } from "zod";
import { milliseconds, seconds } from "../duration.js";
import { assertNoSecrets } from "./guards.js";
import { Constraint, type Job, type Task } from "./job.js";
import {
  driverConfig,
  META,
  nomadVar,
  taskResources,
  WORKER_ENV,
  WorkerDriver,
  WorkerResources,
  WorkerSandbox,
} from "./worker-job.js";

/**
 * A one-shot command in a fresh allocation of a worker's image: a plain batch job (Count 1) whose
 * task's exit code and logs are the result. Used for scoring (hidden tests in a sandbox the agent
 * never touched). Each exec is a new allocation: nothing carries over between two execs.
 */

export const EXEC_GROUP = "exec";
export const EXEC_TASK = "exec";

/**
 * The shell prelude. It copies the image's read-only snapshot into the allocation's writable
 * workspace, enters the working directory and runs the command. Command and cwd arrive base64
 * encoded as $1/$2 so Nomad's `${...}` interpolation of args never touches them.
 */
export const EXEC_PRELUDE = [
  "set -e",
  'ws="$NOMAD_ALLOC_DIR/workspace"',
  'if [ ! -e "$ws" ]; then mkdir -p "$ws"; if [ -d "$FLAKEGYM_SNAPSHOT_DIR" ]; then cp -a "$FLAKEGYM_SNAPSHOT_DIR/." "$ws/"; fi; fi',
  'cd "$ws"',
  'dir="$(printf %s "$2" | base64 -d)"',
  'if [ -n "$dir" ]; then cd "$dir"; fi',
  'cmd="$(printf %s "$1" | base64 -d)"',
  "set +e",
  'exec /bin/sh -c "$cmd"',
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
    snapshotDir: z.string().default("/snapshot"),
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
  const argv = {
    command: shellOf(o.driver),
    args: ["-c", EXEC_PRELUDE, "flakegym-exec", b64(o.command), b64(o.cwd)],
  };
  const env = {
    ...o.env,
    [WORKER_ENV.snapshotDir]: o.snapshotDir,
    HOME: `${nomadVar("NOMAD_TASK_DIR")}/home`,
  };
  const config = driverConfig(o.driver, o.sandbox, argv);
  // An exec task serves no port.
  delete config.ports;
  const task: Task = {
    Name: EXEC_TASK,
    Driver: o.driver.driver,
    Config: config,
    Env: env,
    ...(o.driver.driver === "nix"
      ? { Meta: Object.fromEntries(Object.entries(env).map(([k, v]) => [k.toLowerCase(), v])) }
      : {}),
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
        ...(o.maxRunMs ? { MaxRunDuration: milliseconds(o.maxRunMs) } : {}),
        Tasks: [task],
      },
    ],
  };
}
