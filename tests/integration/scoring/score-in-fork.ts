import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import {
  capabilitiesOf,
  createLocalBackend,
  createPodmanBackend,
  forkSnapshot,
  type HiddenTests,
  hostToolchainPodmanOptions,
  type JudgeConfig,
  type LoadedTask,
  prepareReadOnlyHidden,
  type Score,
  type ScoreOptions,
  type ScoringRun,
  type Snapshot,
  scoreDiff,
  scoreGuarded,
  snapshotNamesCached,
  snapshotTextReader,
  type Worker,
  type WorkerSpec,
} from "@flakegym/runner";

/**
 * A fresh fork of `snapshot` under `dir` and an exec-only sandboxed worker on it (no Cline core);
 * `release` stops the worker and removes the fork.
 */
export async function forkWithWorker(o: {
  readonly dir: string;
  readonly name: string;
  readonly task: LoadedTask;
  readonly snapshot: Snapshot;
  readonly readOnlyFiles?: WorkerSpec["readOnlyFiles"];
  /** The sandbox: bubblewrap (default) or a podman container with this machine's /usr as toolchain. */
  readonly backend?: "local" | "podman";
}): Promise<{ worker: Worker; workspace: string; release(): Promise<void> }> {
  const fork = await forkSnapshot(o.snapshot, {
    dest: join(o.dir, "forks", `${o.task.spec.id}-${o.name}`),
    quotaMb: o.task.spec.limits.diskMb,
  });
  const backend =
    o.backend === "podman"
      ? createPodmanBackend({ ...hostToolchainPodmanOptions(), stateDir: join(o.dir, "podman") })
      : createLocalBackend({ stateDir: join(o.dir, "workers") });
  const worker = await backend.start({
    runId: "scoring-test",
    taskId: o.task.spec.id,
    trajectoryId: o.name,
    profile: o.task.spec.profile,
    workspace: fork.workspace,
    depsDir: fork.deps,
    gateway: {},
    limits: { ...o.task.spec.limits, wallClockMs: 300_000 },
    agent: false,
    ...(o.readOnlyFiles ? { readOnlyFiles: o.readOnlyFiles } : {}),
    // a task's workdir (an imported Harbor WORKDIR such as /app) is bound as rollout binds it
    ...(o.task.spec.workdir ? { workspaceAlias: o.task.spec.workdir } : {}),
  });
  return {
    worker,
    workspace: fork.workspace,
    release: async () => {
      await worker.stop();
      await fork.release();
    },
  };
}

/**
 * Scores `diff` as rollout does: a fresh fork of `snapshot`, the hidden tests prepared on the host
 * (decoys in, bound read-only as root), an exec-only sandboxed worker, the production scorer.
 * `decoys: false` scores as before decoys (the script installs the tests and adds the canary).
 */
export async function scoreInFork(o: {
  readonly dir: string;
  readonly name: string;
  readonly task: LoadedTask;
  readonly snapshot: Snapshot;
  readonly hidden: HiddenTests;
  readonly diff: string;
  readonly decoys?: boolean;
  /** Externalize graded assertions (default); false: decoys only, as before issue 42. */
  readonly externalize?: boolean;
  /** eval_cmd tasks: score beside the decoy twin (default), or once (a baseline for the bench). */
  readonly twin?: boolean;
  /** Reward weights (default: the tests alone) and the judge endpoint, when a test scores the judge term. */
  readonly weights?: { tests: number; build: number; lint: number; judge: number };
  readonly judge?: JudgeConfig;
  /** The judge term as before its code reading (one reading, no tests cap). */
  readonly judgeBaseline?: boolean;
  /** Build and lint commands (a dataset row's terms; give their weights too). */
  readonly buildCmd?: string;
  readonly lintCmd?: string;
  /** The profile whose default build `buildCmd` is (the build then lists what it compiled). */
  readonly reach?: ScoreOptions["reach"];
  /** Build and lint terms as before they checked what they read. */
  readonly reachBaseline?: boolean;
  /** The test command as written, the workspace first (before scoring/demote.ts). */
  readonly workspaceFirst?: boolean;
  /** The scoring sandbox's backend (default local). */
  readonly backend?: "local" | "podman";
  /** Told each scoring worker once it started (a chaos test kills it from outside). */
  readonly onWorker?: (worker: Worker, workspace: string) => void;
}): Promise<Score> {
  const hasTests = o.hidden.install !== undefined;
  const prepared = hasTests
    ? await prepareReadOnlyHidden(
        capabilitiesOf(o.backend ?? "local"),
        o.hidden,
        o.snapshot.workspace,
        undefined,
        undefined,
        {
          externalize: o.externalize ?? true,
        },
      )
    : undefined;
  if (hasTests && !prepared)
    throw new Error(`${o.task.spec.id}: the hidden files could not be computed on the host`);
  // a dataset row (no hidden tests) is scored once, as rollout --dataset scores it: no decoys to add
  const decoys = hasTests && (o.decoys ?? true);
  let n = 0;
  // one fresh fork and worker per scoring run (two for an eval_cmd task: the run and its decoy twin)
  const run: ScoringRun = {
    score: async (hidden, options) => {
      const { worker, workspace, release } = await forkWithWorker({
        ...o,
        name: `${o.name}-${n++}`,
        ...(hidden?.readOnly && decoys ? { readOnlyFiles: hidden.readOnly.files } : {}),
      });
      try {
        o.onWorker?.(worker, workspace);
        using deadline = createDeadline({ timeout: { limit: "one scoring run in a fork", ms: 280_000 } });
        return await scoreDiff(worker, o.diff, o.hidden, options, deadline.signal);
      } finally {
        await release();
      }
    },
  };
  const options: ScoreOptions = {
    partialCredit: "none",
    weights: o.weights ?? { tests: 1, build: 0, lint: 0, judge: 0 },
    ...(o.judge ? { judge: o.judge } : {}),
    repeat: 1,
    termTimeoutMs: 60_000,
    taskPrompt: o.task.spec.prompt,
    readOriginal: snapshotTextReader(o.snapshot.workspace),
    snapshotNames: () => snapshotNamesCached(o.snapshot.workspace).then((r) => r.names),
    ...(o.judgeBaseline ? { judgeBaseline: true } : {}),
    ...(o.buildCmd ? { buildCmd: o.buildCmd } : {}),
    ...(o.lintCmd ? { lintCmd: o.lintCmd } : {}),
    ...(o.reach ? { reach: o.reach } : {}),
    ...(o.reachBaseline ? { reachBaseline: true } : {}),
    ...(o.workspaceFirst ? { workspaceFirst: true } : {}),
  };
  try {
    if (!decoys || !prepared) return await run.score(undefined, options);
    return await scoreGuarded(run, o.twin === false ? { ...prepared, twin: undefined } : prepared, options);
  } finally {
    await prepared?.readOnly?.release();
    await prepared?.twin?.readOnly?.release();
  }
}
