import { LimitName, Outcome, OutcomeKind } from "@flakegym/cline-vendor";
import { z } from "zod";
import { ScoredDataGroup } from "./atropos-schema.js";
import { PartialCredit, Score, SuspiciousPenalty, TamperPenalty, Weights } from "./score.js";

/**
 * Every way a trajectory ends: cline-vendor's `Outcome` (`{kind, limit?, detail}`), the one type
 * the driver, the classification (`classifyOutcome`) and the run's files share.
 */
export { LimitName, Outcome, OutcomeKind } from "@flakegym/cline-vendor";
export { Score } from "./score.js";

/** What run.json and each group record say a task's workers ran on. */
export const WorkerImageProvenance = z.union([
  z.literal("host /usr").describe("this machine's toolchain: the local backend, or podman with /usr bound"),
  z
    .object({
      name: z.string().describe("image name, e.g. flakegym/rust-env"),
      tag: z.string().describe("image tag (the image's Nix output hash)"),
      kind: z.enum(["profile", "snapshot"]).describe("a profile's worker image or the task's snapshot image"),
      digest: z.string().describe("podman's image id (sha256 of the image config)"),
      storePath: z.string().describe("the Nix store path `nix build` produced (the stream script)"),
      ref: z.string().describe("the reference the worker was started with"),
    })
    .strict(),
  z
    .object({
      kind: z.literal("nix-store").describe("the flake's store paths, bound into this machine's sandboxes"),
      toolchain: z.string().describe("store path of the profile's toolchain (read-only, first on PATH)"),
      snapshot: z
        .string()
        .optional()
        .describe("store path of the task's snapshot work tree (absent: built by the runner)"),
      nixpkgs: z
        .enum(["nixpkgs", "standin"])
        .describe("standin: the toolchain is a copy of the build machine's tools (scripts/nix-standin)"),
    })
    .strict(),
]);
export type WorkerImageProvenance = z.infer<typeof WorkerImageProvenance>;
/** A recorded image a worker ran on (not the host). */
export type RecordedImage = Extract<WorkerImageProvenance, { kind: "profile" | "snapshot" }>;
/** The flake's store paths a task's workers ran on (`nix run .#rollout`, local backend). */
export type StoreWorkerProvenance = Extract<WorkerImageProvenance, { kind: "nix-store" }>;

/**
 * One line of `groups.jsonl`: an Atropos ScoredDataGroup. Without a tokenizer the token fields
 * (`tokens`, `masks`, `inference_logprobs`) are absent and everything else is the same.
 */
export const GroupLine = ScoredDataGroup.extend({
  tokens: ScoredDataGroup.shape.tokens.optional(),
  masks: ScoredDataGroup.shape.masks.optional(),
});
export type GroupLine = z.infer<typeof GroupLine>;

export const Timings = z
  .object({
    snapshotMs: z.number().describe("building or finding the task's snapshot (shared by the group)"),
    forkMs: z.number().describe("making the copy-on-write workspace"),
    bootMs: z.number().describe("starting the worker and the Cline core"),
    agentMs: z.number().describe("the Cline task, first request to end"),
    scoreMs: z.number().describe("scoring in a fresh fork"),
    bootCpuS: z
      .number()
      .optional()
      .describe(
        "CPU s of the agent worker until it got the trajectory (the core's boot); absent: not measured",
      ),
    agentCpuS: z.number().optional().describe("CPU s of the agent worker during the Cline task"),
    scoreCpuS: z.number().optional().describe("CPU s of the scoring worker"),
    runnerCpuS: z
      .number()
      .optional()
      .describe("the trajectory's share of the runner process's own CPU (gateway thread included)"),
  })
  .strict();
export type Timings = z.infer<typeof Timings>;

export const Counts = z
  .object({
    turns: z.number().int().describe("policy requests the gateway served"),
    tokensIn: z.number().int().describe("prompt tokens reported by the policy"),
    tokensOut: z.number().int().describe("completion tokens reported by the policy"),
  })
  .strict();
export type Counts = z.infer<typeof Counts>;

/** An infra failure that was retried. */
export const InfraAttempt = z
  .object({
    attempt: z.number().int(),
    detail: z.string(),
    at: z.string(),
  })
  .strict();

/** `trajectories/<id>/result.json`: written last, atomically; its presence means the trajectory is done. */
export const TrajectoryResult = z
  .object({
    trajectoryId: z.string(),
    taskId: z.string(),
    index: z.number().int().describe("position in the group"),
    policy: z.string().describe("policy spec this trajectory ran with"),
    outcome: Outcome,
    reward: z.number().min(0).max(1).nullable().describe("null when infra failed for good"),
    score: Score.nullable(),
    timings: Timings,
    counts: Counts,
    bootOk: z.boolean(),
    pooledWorker: z
      .boolean()
      .optional()
      .describe("the agent ran on a worker pre-booted by the warm pool (--pool); absent: not recorded"),
    infraRetries: z.array(InfraAttempt).describe("infra failures retried before this result"),
    clineTaskId: z.string().optional(),
    prompt: z.string().describe("the task prompt the agent got"),
    finishedAt: z.string(),
  })
  .strict();
export type TrajectoryResult = z.infer<typeof TrajectoryResult>;

/**
 * How many infra failures were retried before a trajectory's result: every shape derived from a
 * result (metrics line, summary, served record, Atropos override, viewer row, eval report) carries
 * this count, computed by `infraRetryCount` (run-format/trajectory-record.ts) from result.json's
 * `infraRetries`, the one list of the retried attempts themselves.
 */
export const InfraRetryCount = z
  .number()
  .int()
  .min(0)
  .describe("infra failures retried before the result (result.json `infraRetries` lists each)");
export type InfraRetryCount = z.infer<typeof InfraRetryCount>;

/** One line of `metrics.jsonl`. */
export const MetricsLine = z
  .object({
    task_id: z.string(),
    trajectory_id: z.string(),
    snapshot_ms: z.number(),
    fork_ms: z.number(),
    boot_ms: z.number(),
    agent_ms: z.number(),
    score_ms: z.number(),
    boot_cpu_s: z
      .number()
      .optional()
      .describe("CPU s of the agent worker's cgroup until it got the trajectory (the core's boot)"),
    agent_cpu_s: z.number().optional().describe("CPU s of the agent worker's cgroup during the Cline task"),
    score_cpu_s: z.number().optional().describe("CPU s of the scoring worker's cgroup"),
    runner_cpu_s: z
      .number()
      .optional()
      .describe(
        "the trajectory's share of the runner process's CPU: at each moment split evenly among the trajectories holding a slot",
      ),
    boot_ok: z.boolean(),
    pooled_worker: z.boolean().optional().describe("the agent ran on a pre-booted worker of the warm pool"),
    outcome: OutcomeKind,
    limit: LimitName.optional().describe("the limit that ended it (limits_exceeded, timeout)"),
    outcome_detail: z.string().describe("why it ended, human readable"),
    reward: z.number().nullable(),
    turns: z.number().int(),
    tokens_in: z.number().int(),
    tokens_out: z.number().int(),
    infra_retries: InfraRetryCount,
    tampered: z
      .array(z.string())
      .optional()
      .describe(
        "score.json `tampered`: reverted harness/build edits and hidden test files rewritten at run time",
      ),
  })
  .strict();
export type MetricsLine = z.infer<typeof MetricsLine>;

/** One line of `samples.jsonl`. */
export const SampleLine = z
  .object({
    prompt: z.string().describe("the task prompt"),
    completion: z.string().describe("the agent's diff as scored"),
    reward: z.number(),
    task_id: z.string(),
    trajectory_id: z.string(),
  })
  .strict();
export type SampleLine = z.infer<typeof SampleLine>;

/** The resolved configuration of a run (stored in run.json; `--resume` reuses it). */
export const RunConfig = z
  .object({
    tasks: z
      .array(z.string())
      .min(1)
      .describe("task ids, in run order (with a dataset: the row ids used, in file order)"),
    dataset: z
      .object({
        file: z.string().describe("absolute path of the dataset file"),
        sha256: z
          .string()
          .regex(/^[0-9a-f]{64}$/)
          .describe("sha256 of the file when the run started"),
        format: z.enum(["jsonl", "parquet"]),
        limit: z.number().int().min(1).optional().describe("--limit: first N accepted rows"),
      })
      .strict()
      .optional()
      .describe("set when the tasks are rows of a dataset file (--dataset); resume refuses a changed file"),
    catalog: z.string().optional().describe("catalog directory (default: built-in)"),
    groupSize: z.number().int().min(1),
    policies: z.array(z.string()).min(1).describe("policy specs; trajectory i uses policies[i % n]"),
    concurrency: z.number().int().min(1),
    maxInfraRetries: z.number().int().min(0),
    seed: z.number().int(),
    partialCredit: PartialCredit,
    weights: Weights,
    buildCmd: z.string().optional().describe("--build-cmd: the build term's command"),
    lintCmd: z.string().optional().describe("--lint-cmd: the lint term's command"),
    judge: z.object({ baseUrl: z.string(), model: z.string() }).strict().optional(),
    testRepeat: z.number().int().min(1).describe("hidden-test runs per scoring"),
    tamperPenalty: TamperPenalty.optional().describe("--tamper-penalty (absent: revert)"),
    suspiciousPenalty: SuspiciousPenalty.optional().describe("--suspicious-penalty (absent: none)"),
    decoyProbe: z
      .literal(true)
      .optional()
      .describe(
        "validate only: the gold policy's scoring draws one decoy at every literal site of every decoyed test, so the sites gold passes a changed value at are found and recorded (tests.run.decoyInert); no other policy is probed",
      ),
    tokenizer: z.string().optional().describe("HF tokenizer dir for token export"),
    contextWindow: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("--context-window: the context window (tokens) Cline is told; absent: Cline's default"),
    segments: z
      .enum(["last", "all"])
      .default("last")
      .describe(
        "a trajectory whose context was rewritten exports several token segments: last = one sequence per trajectory (its final segment; the earlier segments' sampled tokens are counted in its override, untrained_sampled_tokens); all = every segment, each with the trajectory's whole reward",
      ),
    backend: z.enum(["local", "podman", "nomad"]),
    images: z
      .literal("nix")
      .optional()
      .describe("--images nix: workers run on the flake's recorded images (absent: this machine's /usr)"),
    limits: z
      .object({
        maxTurns: z.number().int().min(1),
        timeoutMs: z.number().int().min(1),
        idleMs: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe("longest time without any sign of progress (no model output, no command output)"),
        modelSilenceMs: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe("longest silence of the model server within one call (the gateway's watchdog)"),
        maxResponseBytes: z
          .number()
          .int()
          .min(1)
          .optional()
          .describe("bytes the model server may send for one call (absent: the gateway's default)"),
        testTimeoutMs: z.number().int().min(1),
      })
      .strict(),
    atropos: z
      .object({
        url: z.string(),
        maxTokenLength: z.number().int().positive().describe("sent at registration (env weighting)"),
        dropEqualScores: z.boolean(),
        maxBatchesOffpolicy: z.number().int(),
        waitMs: z.number().int(),
        name: z.string(),
      })
      .strict()
      .optional(),
  })
  .strict();
export type RunConfig = z.infer<typeof RunConfig>;

/** The interpreter a python task's snapshot runs, against the one the task wants (its manifest's envInstall.python). */
export const TaskPython = z
  .object({
    wanted: z.string().optional().describe("the Python the task asks for (`X.Y`)"),
    used: z.string().describe("the Python its venv runs (`X.Y.Z`)"),
    matches: z.boolean().describe("false when used is another major.minor than wanted"),
    provider: z
      .string()
      .optional()
      .describe(
        "where the interpreter came from: user, nix, uv, pyenv, path, or sandbox (a mismatch allowed)",
      ),
  })
  .strict();
export type TaskPython = z.infer<typeof TaskPython>;

/** Per-task facts learnt during the run (snapshot key, dataset row id), for provenance. */
export const TaskProvenance = z
  .object({
    rowId: z.string().optional().describe("dataset row id, or the catalog task.json path"),
    datasetRow: z.number().int().positive().optional().describe("1-based row of the dataset file"),
    snapshotKey: z.string().optional(),
    treeDigest: z
      .string()
      .optional()
      .describe(
        "the content digest of the snapshot tree the run started from (the cache's tree-record.json); --resume refuses a tree that differs",
      ),
    profile: z.string().optional(),
    python: TaskPython.optional().describe("a python task's interpreter: wanted, used, provider"),
    image: WorkerImageProvenance.optional().describe("the image the task's workers ran on"),
  })
  .strict();

/** The Cline core a run used: `run.json`'s and the eval report's `provenance.cline`. */
export const ClineProvenance = z
  .object({
    version: z.string(),
    integrity: z.string().optional(),
    bundle: z
      .string()
      .optional()
      .describe(
        "the core's bundle the local workers run: one-byte (its sha256) or the package's own, and why; whether its source is mapped from a file (and why not)",
      ),
  })
  .strict();
export type ClineProvenance = z.infer<typeof ClineProvenance>;

/** `run.json`. */
export const RunManifest = z
  .object({
    version: z.literal(1),
    runId: z.string(),
    createdAt: z.string(),
    config: RunConfig,
    provenance: z
      .object({
        flakegymVersion: z.string(),
        cline: ClineProvenance,
        node: z.string(),
        nixStorePath: z.string().optional().describe("when run from a flake build (FLAKEGYM_NIX_STORE_PATH)"),
        nixpkgs: z
          .literal("standin")
          .optional()
          .describe(
            "the flake build's nixpkgs when it is not public nixpkgs: the stand-in of tests/nix (scripts/nix-standin), copies of the build machine's tools",
          ),
        imageDigest: z.string().optional().describe("worker image digest for container backends"),
      })
      .strict(),
    tasks: z.record(z.string(), TaskProvenance),
    inputs: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        "sha256 of each input file (catalog task files, scripted plans, tokenizer) when the run started; --resume refuses a changed one",
      ),
    seal: z
      .record(z.string(), z.string())
      .optional()
      .describe(
        "sha256 of each field fixed at creation (config but concurrency/maxInfraRetries/atropos, runId, createdAt, provenance, inputs); --resume refuses an edited one, naming it",
      ),
  })
  .strict();
export type RunManifest = z.infer<typeof RunManifest>;
