import { type BoundHidden, prepareReadOnlyHidden, type ReadOnlyFiles } from "../scoring/read-only.js";
import { type ScoreOptions, scoreDiff } from "../scoring/scorer.js";
import type { Snapshot } from "../snapshots/build.js";
import type { Worker, WorkerBackend, WorkerSpec } from "../workers/types.js";
import type { ScoreInput } from "./deps.js";
import type { RunConfig, Score } from "./schema.js";
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

/** The scorer's options of a run (the judge's key added when there is one). Pure. */
export function scoreOptionsOf(
  config: RunConfig,
  taskPrompt: string,
  bound: BoundHidden | undefined,
  judgeApiKey: string | undefined,
): ScoreOptions {
  return {
    partialCredit: config.partialCredit,
    weights: config.weights,
    ...(config.buildCmd !== undefined ? { buildCmd: config.buildCmd } : {}),
    ...(config.lintCmd !== undefined ? { lintCmd: config.lintCmd } : {}),
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

export async function runScoringAttempt(ctx: ScoringAttemptContext, input: ScoreInput): Promise<Score> {
  const f = await ctx.fork(`${input.slot.trajectoryId}-score`);
  let worker: Worker | undefined;
  let readOnly: ReadOnlyFiles | undefined;
  try {
    // hidden test files owned by another user, bound read-only where the backend can
    const prepared = await prepareReadOnlyHidden(
      ctx.backend.kind,
      input.task.hidden,
      ctx.snapshot.workspace,
      input.signal,
      ctx.scratch,
    );
    readOnly = prepared?.readOnly;
    worker = await ctx.backend.start(ctx.workerSpec(f, prepared?.readOnly?.files), input.signal);
    return await scoreDiff(
      worker,
      input.diff,
      input.task.hidden,
      scoreOptionsOf(ctx.config, input.task.prompt, prepared?.bound, ctx.judgeApiKey),
      input.signal,
    );
  } finally {
    await worker?.stop().catch(() => {});
    await readOnly?.release().catch(() => {});
    await releaseFork(f, ctx.onNote);
  }
}
