import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { UsageError } from "../errors.js";
import { checkSampling, type SamplingParams } from "../policy/sampling.js";
import { withSamplingDefaults } from "../policy/spec.js";
import type { RunConfig } from "../run-format/schema.js";
import { DEFAULTS, type RolloutOptions } from "./options.js";

/**
 * The `rollout` flags' (options.ts) resolution into a RunConfig (pure). Flags that define what a
 * run IS have no schema default (defaults are applied here), so `--resume` can tell a flag the
 * user gave from a default and refuse to mix a stored run with a different config.
 */

/** Flags that define a run; given with --resume they would contradict the stored config. */
const IDENTITY: readonly (keyof RolloutOptions)[] = [
  "task",
  "dataset",
  "limit",
  "catalog",
  "groupSize",
  "policy",
  "seed",
  "temperature",
  "topP",
  "topK",
  "maxTokens",
  "contextWindow",
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
  "tamperPenalty",
  "suspiciousPenalty",
  "tokenizer",
  "segments",
  "atroposName",
  "maxBatchesOffpolicy",
  "atroposWait",
  "maxTokenLength",
  "backend",
  "images",
  "maxTurns",
  "timeout",
  "idleTimeout",
  "modelSilenceTimeout",
  "maxResponseMb",
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
  /** `--dataset` (absolute) and `--limit`: the CLI loads the file and fills `config.tasks` and `config.dataset`. */
  readonly dataset?: { readonly file: string; readonly limit?: number };
}

/**
 * Reward weights from the flags. Catalog tasks: tests 1, the rest 0 unless given. A dataset run has
 * no hidden tests, so build and lint weigh 1 unless told otherwise (each row's commands are the
 * flags', else its profile's defaults: tasks/row-reward.ts) and a given --judge weighs 1. Pure.
 */
export function resolveWeights(
  o: Pick<
    RolloutOptions,
    "weightTests" | "weightBuild" | "weightLint" | "weightJudge" | "buildCmd" | "lintCmd" | "judge"
  >,
  dataset: boolean,
): RunConfig["weights"] {
  const extra = (weight: number | undefined, given: unknown) => weight ?? (dataset && given ? 1 : 0);
  return {
    tests: o.weightTests ?? 1,
    build: extra(o.weightBuild, dataset || o.buildCmd),
    lint: extra(o.weightLint, dataset || o.lintCmd),
    judge: extra(o.weightJudge, o.judge),
  };
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

/** What a run rolls out: catalog tasks, a dataset file's rows, or a stored run to finish. */
export type RunSource =
  | { readonly kind: "task"; readonly tasks: readonly string[] }
  | { readonly kind: "dataset"; readonly file: string; readonly limit?: number }
  | { readonly kind: "resume"; readonly dir: string };

/**
 * The run's source from `--task`, `--dataset [--limit]` and `--resume` (pure): exactly one, and a
 * resumed run changes none of the flags that define it ({@link IDENTITY}).
 */
export function runSourceOf(o: RolloutOptions, cwd: string): RunSource {
  if (o.resume) {
    const given = IDENTITY.filter((k) => o[k] !== undefined);
    if (given.length) {
      throw new UsageError(
        `--resume continues a run with the config stored in its run.json; ${given.map(kebab).join(", ")} cannot be changed`,
        "drop those flags (only --concurrency, --max-infra-retries and --atropos may differ when resuming)",
      );
    }
    return { kind: "resume", dir: o.resume };
  }
  if (o.task?.length && o.dataset !== undefined) {
    throw new UsageError(
      "--task and --dataset cannot be combined",
      "roll out catalog tasks with --task <id>, or the rows of a dataset file with --dataset <file> [--limit N]",
    );
  }
  if (o.dataset !== undefined) {
    const file = resolve(cwd, o.dataset);
    return { kind: "dataset", file, ...(o.limit !== undefined ? { limit: o.limit } : {}) };
  }
  if (!o.task?.length) {
    throw new UsageError(
      "missing required flag --task (or --dataset)",
      "name a catalog task (see flakegym tasks list), a dataset file with --dataset <file>, or --resume <dir>",
    );
  }
  if (o.limit !== undefined) {
    throw new UsageError("--limit only applies to --dataset", "drop --limit, or give --dataset <file>");
  }
  return { kind: "task", tasks: o.task };
}

/** Where the run's workers run, and on what: the local backend always on this machine's /usr. */
export type BackendChoice =
  | { readonly kind: "local" }
  | { readonly kind: "podman" | "nomad"; readonly images: "host" | "nix" };

/** The backend from `--backend` and `--images` (pure): nix images need a container backend. */
export function backendChoiceOf(o: Pick<RolloutOptions, "backend" | "images">): BackendChoice {
  const kind = o.backend ?? "local";
  if (kind !== "local") return { kind, images: o.images === "nix" ? "nix" : "host" };
  if (o.images === "nix") {
    throw new UsageError(
      "--images nix needs a container backend: the local backend runs on this machine's /usr",
      "add --backend podman (or --backend nomad with docker/podman drivers), or drop --images nix",
    );
  }
  return { kind };
}

/**
 * How trajectories are scored: catalog tasks by their hidden tests (plus build, lint and judge
 * terms when given), dataset rows — which carry no hidden tests — by build, lint and judge.
 */
export type RewardPlan = {
  readonly kind: "hidden-tests" | "row-terms";
  readonly weights: RunConfig["weights"];
  readonly judge?: NonNullable<RunConfig["judge"]>;
};

/** `--judge <base-url>#<model>` parsed (pure). */
export function judgeOf(spec: string): NonNullable<RunConfig["judge"]> {
  const hash = spec.lastIndexOf("#");
  if (hash <= 0 || hash === spec.length - 1) {
    throw new UsageError(
      `--judge '${spec}' must be <base-url>#<model>`,
      "e.g. --judge http://127.0.0.1:8000/v1#qwen3-32b",
    );
  }
  const judge = { baseUrl: spec.slice(0, hash), model: spec.slice(hash + 1) };
  if (!/^https?:\/\//.test(judge.baseUrl))
    throw new UsageError(`--judge base URL '${judge.baseUrl}' must start with http:// or https://`);
  return judge;
}

/** The reward from the weight, command and judge flags for `source` (pure); every term it weighs can be computed. */
export function rewardPlanOf(o: RolloutOptions, source: RunSource): RewardPlan {
  const kind = source.kind === "dataset" ? "row-terms" : "hidden-tests";
  const weights = resolveWeights(o, kind === "row-terms");
  // dataset rows fall back to their profile's build and lint commands; catalog tasks have none
  if (kind === "hidden-tests" && weights.build > 0 && !o.buildCmd)
    throw new UsageError("--weight-build needs --build-cmd <command>");
  if (kind === "hidden-tests" && weights.lint > 0 && !o.lintCmd)
    throw new UsageError("--weight-lint needs --lint-cmd <command>");
  if (weights.judge > 0 && !o.judge) throw new UsageError("--weight-judge needs --judge <base-url>#<model>");
  if (kind === "row-terms" && weights.build + weights.lint + weights.judge <= 0) {
    throw new UsageError(
      "--dataset rows carry no hidden tests, so the reward must come from the build, lint or judge term, and none is configured (their weights are all 0)",
      "drop --weight-build 0 / --weight-lint 0 (each row then gets its profile's build and lint commands, or --build-cmd '<command>' / --lint-cmd '<command>'), or add --judge <base-url>#<model>; `flakegym tasks check --dataset <file>` lists what each row is scored by",
    );
  }
  if (source.kind !== "resume" && weights.tests + weights.build + weights.lint + weights.judge <= 0) {
    throw new UsageError(
      "every reward weight is 0",
      "give at least one of --weight-tests/--weight-build/--weight-lint/--weight-judge > 0",
    );
  }
  return { kind, weights, ...(o.judge ? { judge: judgeOf(o.judge) } : {}) };
}

/** The run's policies (sampling flags folded in) and the banner a default policy earns (pure). */
export function policiesOf(
  o: RolloutOptions,
  env: NodeJS.ProcessEnv,
  source: RunSource,
): { policies: string[]; banner?: string } {
  if (o.policy?.length) {
    return { policies: source.kind === "resume" ? o.policy : withSampling(o.policy, o) };
  }
  if (source.kind === "resume") return { policies: ["(stored)"] }; // the stored run's apply; no banner
  const fromEnv = env.FLAKEGYM_POLICY?.trim();
  if (fromEnv) return { policies: withSampling([fromEnv], o) };
  if (source.kind === "dataset") {
    throw new UsageError(
      "--dataset needs a policy: dataset rows have no reference solution for the default `gold` policy to replay",
      "pass --policy <spec> (e.g. openai:http://127.0.0.1:8000/v1#qwen3-8b or scripted:<plan.json>) or set FLAKEGYM_POLICY",
    );
  }
  return {
    policies: withSampling(["gold"], o),
    banner:
      "No policy configured (--policy or FLAKEGYM_POLICY): validating the environment with the `gold` policy, " +
      "which replays each task's reference solution through Cline. Every reward should be 1.",
  };
}

const withSampling = (policies: readonly string[], o: RolloutOptions): string[] => {
  const defaults = samplingFlags(o);
  return policies.map((p) => withSamplingDefaults(p, defaults));
};

/** `--atropos` and its settings as the run config's (pure); it needs token ids, so `--tokenizer`. */
export function atroposOf(o: RolloutOptions, source: RunSource): RunConfig["atropos"] {
  if (!o.atropos) return undefined;
  if (!o.tokenizer && source.kind !== "resume") {
    throw new UsageError(
      "--atropos needs --tokenizer <dir>",
      "the run-api takes token ids; give the policy model's tokenizer directory",
    );
  }
  return {
    url: o.atropos,
    maxTokenLength: o.maxTokenLength ?? DEFAULTS.maxTokenLength,
    dropEqualScores: !o.keepEqualScores,
    maxBatchesOffpolicy: o.maxBatchesOffpolicy ?? DEFAULTS.maxBatchesOffpolicy,
    waitMs: (o.atroposWait ?? DEFAULTS.atroposWaitS) * 1000,
    name: o.atroposName ?? DEFAULTS.atroposName,
  };
}

/** The trajectory limits from the flags, in the config's units (pure). */
export function limitsOf(o: RolloutOptions): RunConfig["limits"] {
  return {
    maxTurns: o.maxTurns ?? DEFAULTS.maxTurns,
    timeoutMs: (o.timeout ?? DEFAULTS.timeoutS) * 1000,
    idleMs: (o.idleTimeout ?? DEFAULTS.idleTimeoutS) * 1000,
    modelSilenceMs: (o.modelSilenceTimeout ?? DEFAULTS.modelSilenceTimeoutS) * 1000,
    maxResponseBytes: (o.maxResponseMb ?? DEFAULTS.maxResponseMb) * 1024 * 1024,
    testTimeoutMs: (o.testTimeout ?? DEFAULTS.testTimeoutS) * 1000,
  };
}

/**
 * The `rollout` flags resolved into a run config (pure): the flags grouped into the run's source
 * ({@link runSourceOf}), backend ({@link backendChoiceOf}) and reward ({@link rewardPlanOf}), each
 * checked on its own, then the config assembled from them.
 */
export function resolveRolloutOptions(
  o: RolloutOptions,
  env: NodeJS.ProcessEnv,
  cwd: string,
  runId: string,
): Resolved {
  const source = runSourceOf(o, cwd);
  const backend = backendChoiceOf(o);
  const atropos = atroposOf(o, source);
  const reward = rewardPlanOf(o, source);
  const { policies, banner } = policiesOf(o, env, source);
  const config: RunConfig = {
    tasks: source.kind === "task" ? [...source.tasks] : ["(stored)"],
    ...(o.catalog ? { catalog: o.catalog } : {}),
    groupSize: o.groupSize ?? DEFAULTS.groupSize,
    policies,
    concurrency: o.concurrency ?? Math.max(1, availableParallelism()),
    maxInfraRetries: o.maxInfraRetries ?? DEFAULTS.maxInfraRetries,
    seed: o.seed ?? DEFAULTS.seed,
    partialCredit: o.partialCredit ?? "none",
    weights: reward.weights,
    ...(o.buildCmd !== undefined ? { buildCmd: o.buildCmd } : {}),
    ...(o.lintCmd !== undefined ? { lintCmd: o.lintCmd } : {}),
    ...(reward.judge ? { judge: reward.judge } : {}),
    testRepeat: o.testRepeat ?? DEFAULTS.testRepeat,
    ...(o.tamperPenalty ? { tamperPenalty: o.tamperPenalty } : {}),
    ...(o.suspiciousPenalty ? { suspiciousPenalty: o.suspiciousPenalty } : {}),
    ...(o.tokenizer ? { tokenizer: o.tokenizer } : {}),
    ...(o.contextWindow !== undefined ? { contextWindow: o.contextWindow } : {}),
    segments: o.segments ?? "last",
    backend: backend.kind,
    ...(backend.kind !== "local" && backend.images === "nix" ? { images: "nix" as const } : {}),
    limits: limitsOf(o),
    ...(atropos ? { atropos } : {}),
  };
  const judgeApiKey = env.FLAKEGYM_JUDGE_API_KEY ?? env.OPENAI_API_KEY;
  return {
    config,
    out: source.kind === "resume" ? source.dir : (o.out ?? join(cwd, "runs", runId)),
    resume: source.kind === "resume",
    ...(source.kind === "dataset"
      ? { dataset: { file: source.file, ...(source.limit !== undefined ? { limit: source.limit } : {}) } }
      : {}),
    ...(banner ? { banner } : {}),
    ...(judgeApiKey ? { judgeApiKey } : {}),
    ...(o.gatewayAdvertise ? { gatewayAdvertise: o.gatewayAdvertise } : {}),
  };
}

/** The sampling flags as run-wide defaults of model policies (`--seed` only when given). Pure. */
export function samplingFlags(
  o: Pick<RolloutOptions, "temperature" | "topP" | "topK" | "maxTokens" | "seed">,
): SamplingParams {
  return checkSampling(
    {
      ...(o.temperature !== undefined ? { temperature: o.temperature } : {}),
      ...(o.topP !== undefined ? { top_p: o.topP } : {}),
      ...(o.topK !== undefined ? { top_k: o.topK } : {}),
      ...(o.maxTokens !== undefined ? { max_tokens: o.maxTokens } : {}),
      ...(o.seed !== undefined ? { seed: o.seed } : {}),
    },
    "rollout flags",
  );
}

/**
 * `--resume --atropos <url>`: the stored run's Atropos settings with the new run-api URL (a run
 * stored without --atropos takes the defaults). The stored run must have token data. Pure.
 */
export function resumeAtropos(
  stored: RunConfig,
  url: string,
  fresh: RunConfig["atropos"],
): RunConfig["atropos"] {
  if (!stored.tokenizer) {
    throw new UsageError(
      "--resume --atropos: the stored run has no --tokenizer, so its groups carry no token ids for a trainer",
      "start a new run with --tokenizer <dir> --atropos <url>",
    );
  }
  const base = stored.atropos ?? fresh;
  if (!base) throw new UsageError("--resume --atropos: no Atropos settings to resume with");
  return { ...base, url };
}

/**
 * The config a `--resume` runs with: the stored one, with `--concurrency` and
 * `--max-infra-retries` replaced only when given (pure).
 */
export function resumeConfig(
  stored: RunConfig,
  o: Pick<RolloutOptions, "concurrency" | "maxInfraRetries">,
): RunConfig {
  return {
    ...stored,
    concurrency: o.concurrency ?? stored.concurrency,
    maxInfraRetries: o.maxInfraRetries ?? stored.maxInfraRetries,
  };
}
