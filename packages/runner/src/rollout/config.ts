import { availableParallelism } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { UsageError } from "../errors.js";
import { PartialCredit } from "../scoring/reward.js";
import type { RunConfig } from "./schema.js";

/**
 * The `rollout` flags and their resolution into a RunConfig (pure). Flags that define what a run
 * IS have no schema default (defaults are applied here), so `--resume` can tell a flag the user
 * gave from a default and refuse to mix a stored run with a different config.
 */

export const DEFAULTS = {
  groupSize: 4,
  maxInfraRetries: 2,
  seed: 0,
  maxTurns: 50,
  timeoutS: 1200,
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
      `seed recorded in run.json and each group's provenance (the policy gateway does not forward it to samplers yet) (default ${DEFAULTS.seed})`,
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
    .describe("weight of the build term (needs --build-cmd) (default 0)"),
  weightLint: z.number().min(0).optional().describe("weight of the lint term (needs --lint-cmd) (default 0)"),
  weightJudge: z
    .number()
    .min(0)
    .optional()
    .describe("weight of the LLM-judge term (needs --judge) (default 0)"),
  buildCmd: z
    .string()
    .optional()
    .describe("shell command that must succeed for the build term (run in the scoring sandbox)"),
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
      "where workers run (default local; nomad: Nomad allocations, needs --gateway-advertise and FLAKEGYM_NOMAD_DRIVER=raw_exec, see docs/nomad.md; podman cannot run Cline agent workers yet)",
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
  testTimeout: z
    .number()
    .int()
    .min(1)
    .optional()
    .describe(`seconds the hidden tests may take per run (default ${DEFAULTS.testTimeoutS})`),
  json: z.boolean().default(false).describe("print the summary as JSON instead of a table"),
});
export type RolloutOptions = z.infer<typeof RolloutOptions>;

/** Flags that define a run; given with --resume they would contradict the stored config. */
const IDENTITY: readonly (keyof RolloutOptions)[] = [
  "task",
  "catalog",
  "groupSize",
  "policy",
  "seed",
  "out",
  "partialCredit",
  "weightTests",
  "weightBuild",
  "weightLint",
  "weightJudge",
  "buildCmd",
  "lintCmd",
  "judge",
  "testRepeat",
  "tokenizer",
  "segments",
  "atropos",
  "atroposName",
  "maxBatchesOffpolicy",
  "atroposWait",
  "maxTokenLength",
  "backend",
  "maxTurns",
  "timeout",
  "testTimeout",
];

export interface Resolved {
  readonly config: RunConfig;
  readonly out: string;
  readonly resume: boolean;
  /** Shown before the run (e.g. "no policy configured: validating the environment with gold"). */
  readonly banner?: string;
  readonly judgeApiKey?: string;
  /** `--gateway-advertise`, validated by the backend wiring (not part of the stored config). */
  readonly gatewayAdvertise?: string;
}

const kebab = (k: string) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** A run id: sortable UTC timestamp plus a short random suffix. */
export function newRunId(now = new Date(), rand = Math.random): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
  return `${stamp}-${Math.floor(rand() * 0xffffff)
    .toString(16)
    .padStart(6, "0")}`;
}

export function resolveRolloutOptions(
  o: RolloutOptions,
  env: NodeJS.ProcessEnv,
  cwd: string,
  runId: string,
): Resolved {
  if (o.resume) {
    const given = IDENTITY.filter((k) => o[k] !== undefined);
    if (given.length) {
      throw new UsageError(
        `--resume continues a run with the config stored in its run.json; ${given.map(kebab).join(", ")} cannot be changed`,
        "drop those flags (only --concurrency and --max-infra-retries may differ when resuming)",
      );
    }
  } else if (!o.task?.length) {
    throw new UsageError(
      "missing required flag --task",
      "name a catalog task (see flakegym tasks list), or --resume <dir>",
    );
  }
  if (o.atropos && !o.tokenizer) {
    throw new UsageError(
      "--atropos needs --tokenizer <dir>",
      "the run-api takes token ids; give the policy model's tokenizer directory",
    );
  }
  const weights = {
    tests: o.weightTests ?? 1,
    build: o.weightBuild ?? 0,
    lint: o.weightLint ?? 0,
    judge: o.weightJudge ?? 0,
  };
  if (weights.build > 0 && !o.buildCmd) throw new UsageError("--weight-build needs --build-cmd <command>");
  if (weights.lint > 0 && !o.lintCmd) throw new UsageError("--weight-lint needs --lint-cmd <command>");
  if (weights.judge > 0 && !o.judge) throw new UsageError("--weight-judge needs --judge <base-url>#<model>");
  if (weights.tests + weights.build + weights.lint + weights.judge <= 0) {
    throw new UsageError(
      "every reward weight is 0",
      "give at least one of --weight-tests/--weight-build/--weight-lint/--weight-judge > 0",
    );
  }
  let judge: RunConfig["judge"];
  if (o.judge) {
    const hash = o.judge.lastIndexOf("#");
    if (hash <= 0 || hash === o.judge.length - 1) {
      throw new UsageError(
        `--judge '${o.judge}' must be <base-url>#<model>`,
        "e.g. --judge http://127.0.0.1:8000/v1#qwen3-32b",
      );
    }
    judge = { baseUrl: o.judge.slice(0, hash), model: o.judge.slice(hash + 1) };
    if (!/^https?:\/\//.test(judge.baseUrl))
      throw new UsageError(`--judge base URL '${judge.baseUrl}' must start with http:// or https://`);
  }
  let banner: string | undefined;
  let policies = o.policy;
  if (!policies?.length && o.resume) {
    policies = ["(stored)"]; // the stored run's policies apply; no banner
  } else if (!policies?.length) {
    const fromEnv = env.FLAKEGYM_POLICY?.trim();
    if (fromEnv) {
      policies = [fromEnv];
    } else {
      policies = ["gold"];
      banner =
        "No policy configured (--policy or FLAKEGYM_POLICY): validating the environment with the `gold` policy, " +
        "which replays each task's reference solution through Cline. Every reward should be 1.";
    }
  }
  const out = o.resume ?? o.out ?? join(cwd, "runs", runId);
  const config: RunConfig = {
    tasks: o.task ?? ["(stored)"],
    ...(o.catalog ? { catalog: o.catalog } : {}),
    groupSize: o.groupSize ?? DEFAULTS.groupSize,
    policies,
    concurrency: o.concurrency ?? Math.max(1, availableParallelism()),
    maxInfraRetries: o.maxInfraRetries ?? DEFAULTS.maxInfraRetries,
    seed: o.seed ?? DEFAULTS.seed,
    partialCredit: o.partialCredit ?? "none",
    weights,
    ...(judge ? { judge } : {}),
    testRepeat: o.testRepeat ?? DEFAULTS.testRepeat,
    ...(o.tokenizer ? { tokenizer: o.tokenizer } : {}),
    segments: o.segments ?? "last",
    backend: o.backend ?? "local",
    limits: {
      maxTurns: o.maxTurns ?? DEFAULTS.maxTurns,
      timeoutMs: (o.timeout ?? DEFAULTS.timeoutS) * 1000,
      testTimeoutMs: (o.testTimeout ?? DEFAULTS.testTimeoutS) * 1000,
    },
    ...(o.atropos
      ? {
          atropos: {
            url: o.atropos,
            maxTokenLength: o.maxTokenLength ?? DEFAULTS.maxTokenLength,
            dropEqualScores: !o.keepEqualScores,
            maxBatchesOffpolicy: o.maxBatchesOffpolicy ?? DEFAULTS.maxBatchesOffpolicy,
            waitMs: (o.atroposWait ?? DEFAULTS.atroposWaitS) * 1000,
            name: o.atroposName ?? DEFAULTS.atroposName,
          },
        }
      : {}),
  };
  const judgeApiKey = env.FLAKEGYM_JUDGE_API_KEY ?? env.OPENAI_API_KEY;
  return {
    config,
    out,
    resume: o.resume !== undefined,
    ...(banner ? { banner } : {}),
    ...(judgeApiKey ? { judgeApiKey } : {}),
    ...(o.gatewayAdvertise ? { gatewayAdvertise: o.gatewayAdvertise } : {}),
  };
}
