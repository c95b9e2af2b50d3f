import type { ProfileId } from "@flakegym/profiles";
import type { RunConfig, Score } from "../run-format/schema.js";
import { type BoundHidden, prepareReadOnlyHidden } from "../scoring/read-only.js";
import { type ScoreOptions, scoreDiff } from "../scoring/scorer.js";
import { snapshotTextReader } from "../scoring/snapshot-files.js";
import { snapshotNamesCached } from "../scoring/snapshot-names.js";
import { type ScoringRun, scoreGuarded } from "../scoring/twin-run.js";
import type { Snapshot } from "../snapshots/manifest.js";
import { rowReachProfile, rowTermCommands } from "../tasks/row-reward.js";
import type { Worker, WorkerBackend, WorkerSpec } from "../workers/types.js";
import type { RolloutTask, ScoreInput } from "./deps.js";
import { cpuBetween } from "./phase-cpu.js";
import { type forkIn, releaseFork } from "./wire-forks.js";

/**
 * One scoring attempt: the agent's diff applied in a fresh exec-only fork of the same snapshot,
 * the hidden tests bound read-only where the backend can, the scorer run; everything released.
 */

type ScoringFork = Awaited<ReturnType<typeof forkIn>>;

/** How long the LLM judge may take per call. */
const JUDGE_TIMEOUT_MS = 120_000;

/** What a scoring attempt is run with, made by the wiring (wire.ts). */
export interface ScoringAttemptContext {
  readonly config: RunConfig;
  readonly backend: WorkerBackend;
  readonly snapshot: Snapshot;
  /** Where the read-only hidden files go: the run's owned scratch directory. */
  readonly scratch: string;
  readonly judgeApiKey?: string | undefined;
  /** A fresh fork of the snapshot for this attempt. */
  fork(name: string): Promise<ScoringFork>;
  /** The scoring worker's spec on `fork`, with the hidden files bound read-only when given. */
  workerSpec(fork: ScoringFork, readOnlyFiles: WorkerSpec["readOnlyFiles"] | undefined): WorkerSpec;
  readonly onNote?: ((message: string) => void) | undefined;
}

/** A dataset row: it has no hidden tests to install (see HiddenTests.install). Pure. */
function isRowTask(task: Pick<RolloutTask, "hidden">): boolean {
  return task.hidden.install === undefined;
}

/** The scorer's options of a run (the judge's key added when there is one). Pure. */
export function scoreOptionsOf(
  config: RunConfig,
  task: Pick<RolloutTask, "prompt" | "profile" | "hidden">,
  bound: BoundHidden | undefined,
  judgeApiKey: string | undefined,
): ScoreOptions {
  // a dataset row (no hidden tests) falls back to its profile's build and lint commands
  const commands = isRowTask(task)
    ? rowTermCommands(task.profile as ProfileId, { buildCmd: config.buildCmd, lintCmd: config.lintCmd })
    : {
        ...(config.buildCmd !== undefined ? { buildCmd: config.buildCmd } : {}),
        ...(config.lintCmd !== undefined ? { lintCmd: config.lintCmd } : {}),
      };
  // its default build also lists the files it compiled (scoring/build-reach.ts)
  const reach = isRowTask(task)
    ? rowReachProfile(task.profile as ProfileId, { buildCmd: config.buildCmd })
    : undefined;
  const taskPrompt = task.prompt;
  // a row whose profile has no command for a term (no python linter) is not scored by it at all
  const weights = isRowTask(task)
    ? {
        ...config.weights,
        build: commands.buildCmd === undefined ? 0 : config.weights.build,
        lint: commands.lintCmd === undefined ? 0 : config.weights.lint,
      }
    : config.weights;
  return {
    partialCredit: config.partialCredit,
    weights,
    ...commands,
    ...(reach ? { reach } : {}),
    repeat: config.testRepeat,
    tamperPenalty: config.tamperPenalty ?? "revert",
    ...(config.suspiciousPenalty ? { suspiciousPenalty: config.suspiciousPenalty } : {}),
    ...(bound ? { bound } : {}),
    termTimeoutMs: config.limits.testTimeoutMs,
    taskPrompt,
    ...(config.judge
      ? {
          judge: {
            ...config.judge,
            timeoutMs: JUDGE_TIMEOUT_MS,
            ...(judgeApiKey ? { apiKey: judgeApiKey } : {}),
          },
        }
      : {}),
  };
}

/** Whether this trajectory's scoring is `validate`'s probe of gold (RunConfig.decoyProbe). Pure. */
export const probesDecoys = (config: Pick<RunConfig, "decoyProbe">, policy: string): boolean =>
  config.decoyProbe === true && policy === "gold";

/**
 * Scores the diff: the hidden files prepared on the host, then one fresh fork and worker per
 * scoring run (two for an eval_cmd task with a decoy twin, scoring/twin-run.ts).
 */
export async function runScoringAttempt(ctx: ScoringAttemptContext, input: ScoreInput): Promise<Score> {
  // hidden test files owned by another user, bound read-only where the backend can
  const prepared = await prepareReadOnlyHidden(
    ctx.backend.capabilities,
    input.task.hidden,
    ctx.snapshot.workspace,
    input.signal,
    ctx.scratch,
    // validate's gold run probes every decoy site (scoring/decoys/site-key.ts); no other policy is
    { prompt: input.task.prompt, probeDecoys: probesDecoys(ctx.config, input.slot.policy) },
  );
  try {
    const run: ScoringRun = {
      score: async (hidden, options) => {
        const f = await ctx.fork(`${input.slot.trajectoryId}-score`);
        let worker: Worker | undefined;
        try {
          worker = await ctx.backend.start(ctx.workerSpec(f, hidden?.readOnly?.files), input.signal);
          const score = await scoreDiff(worker, input.diff, input.task.hidden, options, input.signal);
          const cpuS = cpuBetween(0, await worker.cpuSeconds?.());
          return cpuS === undefined ? score : { ...score, cpuS };
        } finally {
          await worker?.stop().catch(() => {});
          await releaseFork(f, ctx.onNote);
        }
      },
    };
    return await scoreGuarded(run, prepared, {
      ...scoreOptionsOf(ctx.config, input.task, prepared?.bound, ctx.judgeApiKey),
      readOriginal: snapshotTextReader(ctx.snapshot.workspace),
      snapshotNames: () => snapshotNamesCached(ctx.snapshot.workspace).then((r) => r.names),
    });
  } finally {
    await prepared?.readOnly?.release().catch(() => {});
    await prepared?.twin?.readOnly?.release().catch(() => {});
  }
}
