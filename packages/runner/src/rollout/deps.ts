import type { TokenSequence } from "../emit/group.js";
import type { AtroposMessage } from "../run-format/atropos-schema.js";
import type {
  Counts,
  Outcome,
  Score,
  TaskPython,
  TrajectoryResult,
  WorkerImageProvenance,
} from "../run-format/schema.js";
import type { HiddenTests } from "../scoring/scorer.js";
import type { TrajectorySlot } from "./plan.js";

/**
 * The effects a rollout composes, as the orchestrator sees them. `createRolloutDeps` wires them to
 * the task catalog, snapshots, a worker backend, the policy gateway and the Cline session driver;
 * the orchestrator (`runRollout`) owns concurrency, retries, resume, files and emitting.
 */

/** A task ready to roll out. */
export interface RolloutTask {
  readonly id: string;
  /** Dataset row id or catalog file, for provenance. */
  readonly rowId: string;
  /** 1-based row of the dataset file, for dataset tasks. */
  readonly datasetRow?: number;
  readonly profile: string;
  readonly prompt: string;
  readonly network: "none" | "required";
  /** The hidden tests; without `install`/`run` (a dataset row) the tests term is left out. */
  readonly hidden: HiddenTests;
  /** What the task's workers run on (provenance: run.json and each group record). */
  readonly image?: WorkerImageProvenance;
}

/** A task's snapshot, built or found in the cache. */
export interface SnapshotRef {
  readonly key: string;
  readonly cached: boolean;
  /** A python snapshot's interpreter: wanted, used and its provider (the manifest's envInstall.python). */
  readonly python?: TaskPython;
  /** The content digest of the snapshot's tree as recorded in the cache (snapshots/tree-record.ts). */
  readonly treeDigest?: string;
  /** Asked for with `startedFrom`: the tree's paths that differ from its record now (edited). */
  readonly treeChanged?: readonly string[];
}

/** What one agent attempt produced (already collected into the trajectory directory). */
export interface AgentAttempt {
  readonly outcome: Outcome;
  readonly clineTaskId?: string;
  readonly bootOk: boolean;
  /** The worker was pre-booted by the warm pool (undefined: the backend does not say). */
  readonly pooledWorker?: boolean;
  readonly forkMs: number;
  readonly bootMs: number;
  readonly agentMs: number;
  /** CPU seconds of the worker until it was handed the trajectory (the core's boot), when measured. */
  readonly bootCpuS?: number;
  /** CPU seconds of the worker during the Cline task, when measured. */
  readonly agentCpuS?: number;
  readonly counts: Counts;
  /** The agent's change to the workspace (`git diff` against the snapshot, new files included). */
  readonly diff: string;
}

export interface AgentInput {
  readonly task: RolloutTask;
  readonly snapshot: SnapshotRef;
  readonly slot: TrajectorySlot;
  /** The trajectory directory: artifacts, turns.jsonl and diff.patch go here. */
  readonly dir: string;
  readonly signal: AbortSignal;
  /** Called as model turns complete (for progress). */
  readonly onTurn?: (turns: number) => void;
  /** Called when the worker is up and the agent starts. */
  readonly onPhase?: (phase: "forking" | "booting" | "agent" | "collecting", detail?: string) => void;
}

export interface ScoreInput {
  readonly task: RolloutTask;
  readonly snapshot: SnapshotRef;
  readonly slot: TrajectorySlot;
  readonly diff: string;
  readonly signal: AbortSignal;
}

/** What a trajectory contributes to its group. */
export interface TrajectoryExportResult {
  readonly messages: AtroposMessage[];
  readonly sequences?: TokenSequence[];
  /** Set when the token export could not be built: the reason. */
  readonly exportError?: string;
}

export interface ExportInput {
  readonly dir: string;
  readonly result: TrajectoryResult;
}

export interface RolloutDeps {
  loadTask(id: string, signal: AbortSignal): Promise<RolloutTask>;
  /**
   * The task's snapshot. `trajectories`: how many of its trajectories this run starts (a resumed
   * run: the ones left), so a warm pool boots no worker nobody will use. `startedFrom`: a resumed
   * task's tree digest from run.json — the tree is then checked against its record (`treeChanged`).
   */
  snapshot(
    task: RolloutTask,
    signal: AbortSignal,
    progress: (detail: string) => void,
    trajectories: number,
    startedFrom?: string,
  ): Promise<SnapshotRef>;
  /**
   * One attempt: fresh fork, worker with the Cline core, gateway route for the slot's policy, the
   * Cline task, artifacts collected into `dir`, everything stopped. An infra failure is either an
   * `infra_error` outcome or a thrown error; both are retried by the orchestrator.
   */
  runAgent(input: AgentInput): Promise<AgentAttempt>;
  /** Scores a diff in a fresh exec-only fork of the same snapshot. */
  score(input: ScoreInput): Promise<Score>;
  /**
   * The trajectory's chat and (with a tokenizer) its token sequences for the group, or why its token
   * export could not be built (`exportError`: the trajectory is then left out of its group).
   */
  exportTrajectory(input: ExportInput): Promise<TrajectoryExportResult>;
  /** Facts for run.json (cline version and integrity, image digest, …). */
  provenance(): Promise<{
    cline: { version: string; integrity?: string; bundle?: string };
    imageDigest?: string;
  }>;
  close(): Promise<void>;
}
