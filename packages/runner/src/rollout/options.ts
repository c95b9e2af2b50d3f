import { z } from "zod";
import { ImagesMode } from "../images/worker-images.js";
import { PartialCredit, TamperPenalty } from "../scoring/reward.js";
import { SuspiciousPenalty } from "../scoring/screen.js";
import { PythonFlags } from "../snapshots/python-options.js";
import { POOL_DEFAULT_IDLE_S, poolHelp, REUSE_HELP } from "../workers/pool/decisions.js";

/**
 * The `rollout` command's flags as one zod schema (the parser and `--help` are generated from it)
 * and the defaults of the flags that define a run, which have no schema default so that `--resume`
 * can tell a given flag from a default (config.ts resolves them).
 */

export const DEFAULTS = {
  groupSize: 4,
  maxInfraRetries: 2,
  seed: 0,
  maxTurns: 50,
  timeoutS: 1200,
  idleTimeoutS: 300,
  modelSilenceTimeoutS: 120,
  maxResponseMb: 16,
  testTimeoutS: 600,
  testRepeat: 1,
  atroposName: "flakegym-cline",
  maxBatchesOffpolicy: 3,
  atroposWaitS: 600,
  maxTokenLength: 32768,
} as const;

export const RolloutOptions = z.object({
  task: z
    .array(z.string().min(1))
    .optional()
    .describe("catalog task id to roll out (repeat for several tasks)"),
  dataset: z
    .string()
    .min(1)
    .optional()
    .describe(
      "dataset file (.jsonl or .parquet, swe-agent-13k schema; or hf:<org>/<name>[@revision][:split] from the Hugging Face cache) to roll out instead of --task; needs --policy; rows are scored by build and lint (each row's profile's commands unless --build-cmd/--lint-cmd) and --judge when given (flakegym tasks check lists each row's terms)",
    ),
  limit: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("with --dataset: roll out only the first N accepted rows (default: all)"),
  catalog: z.string().optional().describe("task catalog directory (default: the built-in catalog)"),
  groupSize: z
    .number()
    .int()
    .min(1)
    .max(256)
    .optional()
    .describe(`trajectories per task (default ${DEFAULTS.groupSize})`),
  policy: z
    .array(z.string().min(1))
    .optional()
    .describe(
      "policy spec: openai:<url>#<model>, anthropic:<url>#<model>, scripted:<file>, gold, empty; repeat to mix (trajectory i gets policy i mod n) (default: $FLAKEGYM_POLICY, else gold)",
    ),
  concurrency: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe("workers running at once across all tasks (default: the number of CPUs)"),
  pool: z.number().int().min(0).max(64).optional().describe(poolHelp("rollout")),
  reuse: z.number().int().min(1).max(64).optional().describe(REUSE_HELP),
  poolIdle: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      `seconds a pre-booted worker may wait for a trajectory before it is stopped (default ${POOL_DEFAULT_IDLE_S})`,
    ),
  maxInfraRetries: z
    .number()
    .int()
    .min(0)
    .max(10)
    .optional()
    .describe(`retries of a trajectory after an infra failure (default ${DEFAULTS.maxInfraRetries})`),
  seed: z
    .number()
    .int()
    .optional()
    .describe(
      `seed recorded in run.json and each group's provenance; when given, model policies also send it to the sampler (trajectory i of a group: seed + i) (default ${DEFAULTS.seed}, not sent)`,
    ),
  temperature: z
    .number()
    .min(0)
    .max(2)
    .optional()
    .describe(
      "sampling temperature of model policies, instead of the 0 Cline asks for (a policy spec's ?temperature= wins)",
    ),
  topP: z.number().gt(0).max(1).optional().describe("nucleus sampling mass of model policies (?top_p=)"),
  topK: z.number().int().min(-1).optional().describe("top-k sampling of model policies (?top_k=)"),
  maxTokens: z
    .number()
    .int()
    .positive()
    .optional()
    .describe("tokens one model call may sample, for model policies (?max_tokens=)"),
  contextWindow: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(
      "context window (tokens) Cline is told the model has; Cline truncates its history against it (absent: Cline's default, 128 000)",
    ),
  out: z.string().optional().describe("run directory (default runs/<timestamp>-<random>)"),
  resume: z.string().optional().describe("finish the run in this directory (its run.json holds the config)"),
  partialCredit: PartialCredit.optional().describe(
    "test reward: none = all tests must pass; fraction = passed/total (default none)",
  ),
  weightTests: z.number().min(0).optional().describe("weight of the hidden-test term (default 1)"),
  weightBuild: z
    .number()
    .min(0)
    .optional()
    .describe(
      "weight of the build term (needs --build-cmd; with --dataset a row without it runs its profile's build command) (default 0; with --dataset 1)",
    ),
  weightLint: z
    .number()
    .min(0)
    .optional()
    .describe(
      "weight of the lint term (needs --lint-cmd; with --dataset a row without it runs its profile's lint command) (default 0; with --dataset 1)",
    ),
  weightJudge: z
    .number()
    .min(0)
    .optional()
    .describe(
      "weight of the LLM-judge term (needs --judge) (default 0; with --dataset 1 when --judge is given)",
    ),
  buildCmd: z
    .string()
    .optional()
    .describe(
      "shell command that must succeed for the build term (run in the scoring sandbox; with --dataset it replaces each row's default)",
    ),
  lintCmd: z.string().optional().describe("shell command that must succeed for the lint term"),
  judge: z
    .string()
    .optional()
    .describe(
      "LLM judge: <openai-compatible-base-url>#<model>; key from $FLAKEGYM_JUDGE_API_KEY or $OPENAI_API_KEY",
    ),
  testRepeat: z
    .number()
    .int()
    .min(1)
    .max(20)
    .optional()
    .describe("hidden-test runs per scoring (flaky detection) (default 1)"),
  tokenizer: z
    .string()
    .optional()
    .describe("Hugging Face tokenizer directory: adds tokens/masks/logprobs to groups.jsonl"),
  segments: z
    .enum(["last", "all"])
    .optional()
    .describe(
      "token export of a trajectory whose context was rewritten (several segments): last = its final segment, one sequence per trajectory (Atropos-compatible); all = every segment, reward split (default last)",
    ),
  atropos: z
    .string()
    .optional()
    .describe("Atropos run-api URL to register with and push groups to (needs --tokenizer)"),
  atroposName: z
    .string()
    .optional()
    .describe(`env name registered with Atropos (default ${DEFAULTS.atroposName})`),
  keepEqualScores: z
    .boolean()
    .default(false)
    .describe("send groups whose scores are all equal (Atropos drops them by default)"),
  maxBatchesOffpolicy: z
    .number()
    .int()
    .optional()
    .describe(
      `Atropos back-pressure: batches allowed in the queue before sending pauses (default ${DEFAULTS.maxBatchesOffpolicy})`,
    ),
  atroposWait: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      `seconds to wait for the trainer or a full queue before leaving a group pending (default ${DEFAULTS.atroposWaitS})`,
    ),
  maxTokenLength: z
    .number()
    .int()
    .positive()
    .optional()
    .describe(`max token length registered with Atropos (default ${DEFAULTS.maxTokenLength})`),
  backend: z
    .enum(["local", "podman", "nomad"])
    .optional()
    .describe(
      "where workers run (default local; nomad: Nomad allocations, needs --gateway-advertise and FLAKEGYM_NOMAD_DRIVER=raw_exec (or docker/podman with --images nix), see docs/reference/nomad.md; podman: containers (runc, --network none) from a locally imported minimal image with this machine's /usr bound read-only, see docs/reference/sandbox.md)",
    ),
  images: ImagesMode.optional().describe(
    "what workers run on: host (default) = this machine's /usr; nix = the flake's images recorded by `flakegym images load` (a task's snapshot image, else its profile's), with --backend podman or nomad; a task without one stops the run before it starts (exit 3), naming the command that makes it",
  ),
  gatewayAdvertise: z
    .string()
    .optional()
    .describe(
      "host:port of this machine that remote workers (Nomad allocations) reach the policy gateway at; the gateway also listens there (never loopback)",
    ),
  maxTurns: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`model calls allowed per trajectory (default ${DEFAULTS.maxTurns})`),
  timeout: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`seconds one trajectory may take (default ${DEFAULTS.timeoutS})`),
  idleTimeout: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      `seconds a trajectory may show no progress (no model output, no output of the agent's command) before it ends as timeout/idle (default ${DEFAULTS.idleTimeoutS})`,
    ),
  modelSilenceTimeout: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      `seconds the model server may send nothing during a call (before its first event or between two) before the call fails and the trajectory ends as policy_error (default ${DEFAULTS.modelSilenceTimeoutS})`,
    ),
  maxResponseMb: z
    .number()
    .int()
    .min(1)
    .max(1024)
    .optional()
    .describe(
      `MiB the model server may send for one call; a larger answer fails the call and the trajectory ends as policy_error (default ${DEFAULTS.maxResponseMb})`,
    ),
  testTimeout: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`seconds the hidden tests may take per run (default ${DEFAULTS.testTimeoutS})`),
  tamperPenalty: TamperPenalty.optional().describe(
    "what an edit to a protected harness/build file costs: revert = score the tree with it reverted, zero = reward 0 (default revert; either way it is recorded in score.json `tampered`)",
  ),
  suspiciousPenalty: SuspiciousPenalty.optional().describe(
    "what a hit of the static screen for hack-shaped code costs: none = recorded in score.json `suspicious` only, zero = reward 0 (default none)",
  ),
  json: z.boolean().default(false).describe("print the summary as JSON instead of a table"),
  ...PythonFlags,
});
export type RolloutOptions = z.infer<typeof RolloutOptions>;
