import type { GroupStatus } from "./schema.js";

/**
 * How a served group ends, decided from what happened. Pure. A group is `complete` only when the
 * rollout completed and every one of its trajectories has a streamed record: a trajectory whose
 * record could not be built leaves the group `failed` (not final: resubmitting retries the missing
 * records, and finished trajectories never run again), never `complete` with trajectories missing.
 */

export interface GroupEndInput {
  /** DELETE aborted the group. */
  readonly cancelled: boolean;
  /** Why the group was stopped otherwise (the server closing), when it was. */
  readonly aborted?: string;
  /** The rollout threw (setup, a backend or snapshot fault). */
  readonly thrown?: string;
  /** A task of the rollout ended with an error. */
  readonly taskError?: { readonly code: string; readonly message: string };
  /** The rollout's own verdict: every planned trajectory finished. */
  readonly rolloutComplete: boolean;
  /** Trajectories the group runs (tasks × group size). */
  readonly expected: number;
  /** Records streamed. */
  readonly records: number;
  /** Finished trajectories whose record could not be built. */
  readonly failures: readonly { readonly trajectory_id: string; readonly reason: string }[];
}

export interface GroupEnd {
  readonly status: Exclude<GroupStatus, "running">;
  readonly detail?: string;
}

const list = (failures: GroupEndInput["failures"]) =>
  failures
    .slice(0, 3)
    .map((f) => `${f.trajectory_id}: ${f.reason}`)
    .join("; ") + (failures.length > 3 ? `; and ${failures.length - 3} more` : "");

export function groupEndOf(i: GroupEndInput): GroupEnd {
  if (i.cancelled) return { status: "cancelled", detail: "cancelled by DELETE" };
  if (i.aborted !== undefined) return { status: "failed", detail: i.aborted };
  if (i.thrown !== undefined) return { status: "failed", detail: i.thrown };
  if (i.taskError) return { status: "failed", detail: `${i.taskError.code}: ${i.taskError.message}` };
  if (i.failures.length > 0)
    return {
      status: "failed",
      detail: `${i.records} of ${i.expected} trajectories have a record; ${i.failures.length} finished without one (${list(i.failures)}); resubmit to retry them`,
    };
  if (!i.rolloutComplete) return { status: "failed", detail: "the group did not complete" };
  if (i.records < i.expected)
    return {
      status: "failed",
      detail: `${i.records} of ${i.expected} trajectories have a record; resubmit to retry the rest`,
    };
  return { status: "complete" };
}
