export { type RunState, readManifest, readRunState, runPaths } from "../run-format/run-dir.js";
export {
  Counts,
  LimitName,
  MetricsLine,
  Outcome,
  OutcomeKind,
  RunConfig,
  RunManifest,
  SampleLine,
  Score,
  Timings,
  TrajectoryResult,
} from "../run-format/schema.js";
export { createSemaphore } from "../workers/semaphore.js";
export {
  classifyOutcome,
  type GatewayVerdict,
  gatewayVerdictOf,
  type OutcomeEvidence,
  reasonOf,
  workerExitGraceMs,
} from "./classify-outcome.js";
export { newRunId, resolveRolloutOptions } from "./config.js";
export {
  type DatasetSelection,
  datasetSummaryOf,
  idProblem,
  reselectDataset,
  selectDataset,
  selectRows,
  sha256File,
} from "./dataset-tasks.js";
export type {
  AgentAttempt,
  AgentInput,
  ExportInput,
  RolloutDeps,
  RolloutTask,
  ScoreInput,
  SnapshotRef,
} from "./deps.js";
export { DEFAULTS, RolloutOptions } from "./options.js";
export { type Plan, planRun, policyFor, type TrajectorySlot, trajectoryId } from "./plan.js";
export { nixStorePathOf } from "./provenance.js";
export { isRetryable, shouldRetry } from "./retry.js";
export { type RolloutResult, runRollout } from "./run-rollout.js";
export { RunDatasetSummary, RunSummary, renderSummary, TaskSummary } from "./summary.js";
export { renderVerdicts, type TaskVerdict, verdictFor } from "./validate.js";
export { chatOf, createRolloutDeps, type WireOptions } from "./wire.js";
