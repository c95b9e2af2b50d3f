import type { RunState } from "../run-format/run-dir.js";

/** Pure planning of what a run still has to do, given what its directory already holds. */

/** A trajectory's id: `<task>-t<index>`; stable, so `--resume` finds it again. */
export const trajectoryId = (taskId: string, index: number) => `${taskId}-t${index}`;

/** Trajectory i runs with policies[i % n]: one policy for the whole group, or a mix. */
export const policyFor = (policies: readonly string[], index: number) => policies[index % policies.length]!;

/** Trajectory i is trial ⌊i / n⌋ of its policy (0-based): its place among the group's trajectories with that policy. */
export const trialOf = (policies: readonly string[], index: number) => Math.floor(index / policies.length);

export interface TrajectorySlot {
  readonly taskId: string;
  readonly index: number;
  readonly trajectoryId: string;
  readonly policy: string;
}

export interface Plan {
  /** Every trajectory of the run, in order. */
  readonly all: readonly TrajectorySlot[];
  /** Trajectories to run (not finished). */
  readonly toRun: readonly TrajectorySlot[];
  /** Partial trajectory directories to delete before they are run again. */
  readonly clean: readonly string[];
  /** Finished trajectories whose metrics line is missing (killed between writes). */
  readonly metricsMissing: readonly string[];
  /** Finished, rewarded trajectories whose samples line is missing. */
  readonly samplesMissing: readonly string[];
  /** Tasks whose every trajectory is finished but whose group line is missing. */
  readonly groupsMissing: readonly string[];
  /** Tasks that are completely done (group written). */
  readonly tasksDone: readonly string[];
  /**
   * Members of a written group whose result is gone (their directory deleted after the group was
   * written): a group line is final, so they are reported, never run again.
   */
  readonly lost: readonly string[];
}

export function planRun(
  cfg: {
    readonly tasks: readonly string[];
    readonly groupSize: number;
    readonly policies: readonly string[];
  },
  state: RunState,
): Plan {
  const all: TrajectorySlot[] = [];
  for (const taskId of cfg.tasks) {
    for (let i = 0; i < cfg.groupSize; i++) {
      all.push({
        taskId,
        index: i,
        trajectoryId: trajectoryId(taskId, i),
        policy: policyFor(cfg.policies, i),
      });
    }
  }
  // a task whose group line is written is final: none of its members runs again
  const open = all.filter((s) => !state.groupTasks.has(s.taskId));
  const known = new Set(open.map((s) => s.trajectoryId));
  const toRun = open.filter((s) => !state.results.has(s.trajectoryId));
  const done = all.filter((s) => state.results.has(s.trajectoryId));
  return {
    all,
    toRun,
    clean: state.partial.filter((id) => known.has(id) && !state.results.has(id)),
    metricsMissing: done.filter((s) => !state.metricsIds.has(s.trajectoryId)).map((s) => s.trajectoryId),
    samplesMissing: done
      .filter(
        (s) => state.results.get(s.trajectoryId)!.reward !== null && !state.samplesIds.has(s.trajectoryId),
      )
      .map((s) => s.trajectoryId),
    groupsMissing: cfg.tasks.filter(
      (t) =>
        !state.groupTasks.has(t) &&
        all.filter((s) => s.taskId === t).every((s) => state.results.has(s.trajectoryId)),
    ),
    tasksDone: cfg.tasks.filter((t) => state.groupTasks.has(t)),
    lost: all
      .filter((s) => state.groupTasks.has(s.taskId) && !state.results.has(s.trajectoryId))
      .map((s) => s.trajectoryId),
  };
}
