import type { WorkerExit } from "./types.js";

/**
 * A worker frozen from outside, told apart from an agent that made no progress (issue 46). The
 * supervisor in every sandbox writes a heartbeat a second, whatever the agent does; when none came
 * for {@link HEARTBEAT_LOST_MS}, the worker looks for a freeze. Who could reach the frozen process
 * decides whose fault it is: a stop of something no code in the sandbox can signal (the sandbox's
 * host-side process, outside its pid namespace; a paused container) is the machine's — `frozen`,
 * `infra_error`, retried. A stop the agent's own commands could have made (the supervisor or the
 * core, same uid and pid namespace) cannot be told from one made outside: on one user the kernel
 * shows only that it is stopped, not by whom. Such a stop ends the worker at once, `frozen` but
 * `withinReach`: the policy's end (agent_error, scored on what it wrote, never retried) once the
 * agent's commands ran, the machine's (infra_error, retried) before — so a stop can never buy the
 * agent a retry, and the row is always written.
 */

/** How long without a heartbeat (it comes every second) before the worker looks for a freeze. */
export const HEARTBEAT_LOST_MS = 5_000;

export interface FreezeEvidence {
  /** ms since the supervisor's last heartbeat; undefined when none came (not started, or none sent). */
  readonly heartbeatAgeMs: number | undefined;
  /**
   * What was found stopped or frozen out of the agent's reach, in words (e.g. "its bwrap, outside
   * the sandbox's pid namespace, is stopped (state T)"); undefined when nothing was.
   */
  readonly outsideFreeze: string | undefined;
  /**
   * What was found stopped that the agent's commands could have stopped themselves (the supervisor
   * of a sandbox of one user), in words; undefined when nothing was. Weighed only without `outsideFreeze`.
   */
  readonly insideStop?: string | undefined;
}

/**
 * At the wall clock the heartbeat may be overdue by less than {@link HEARTBEAT_LOST_MS} (a freeze
 * in the last seconds): a stop from outside seen then, with at least this long without a heartbeat
 * (it comes every second), ends the worker as frozen, not as the agent's timeout.
 */
export const DEADLINE_LOST_MS = 1_500;

/** Whether the heartbeat is overdue: one came once, and none for longer than `lostMs`. Pure. */
export const heartbeatLost = (ageMs: number | undefined, lostMs = HEARTBEAT_LOST_MS): ageMs is number =>
  ageMs !== undefined && ageMs > lostMs;

/** The worker's end when it is frozen from outside, else undefined (alive, or not provably frozen by the machine). Pure. */
export function frozenExitOf(e: FreezeEvidence, lostMs = HEARTBEAT_LOST_MS): WorkerExit | undefined {
  if (!heartbeatLost(e.heartbeatAgeMs, lostMs)) return undefined;
  const s = Math.round(e.heartbeatAgeMs / 1000);
  if (e.outsideFreeze !== undefined)
    return {
      reason: "frozen",
      detail: `frozen from outside its sandbox: no heartbeat from its supervisor for ${s} s and ${e.outsideFreeze}, which no code inside can do`,
    };
  if (e.insideStop === undefined) return undefined;
  return {
    reason: "frozen",
    withinReach: true,
    detail: `stopped: no heartbeat from its supervisor for ${s} s and ${e.insideStop}; in a sandbox of one user the agent's commands could have stopped it, and a stop from outside cannot be told from theirs`,
  };
}

/**
 * Frozen from outside at a deadline (pure): a stop no code inside can make, seen now, and the
 * heartbeat overdue by {@link DEADLINE_LOST_MS}; a stop within the agent's reach does not count.
 */
export function frozenAtDeadlineOf(e: FreezeEvidence): WorkerExit | undefined {
  return frozenExitOf({ heartbeatAgeMs: e.heartbeatAgeMs, outsideFreeze: e.outsideFreeze }, DEADLINE_LOST_MS);
}

/**
 * The worker's end when its wall clock runs out (pure): frozen when a stop from outside is seen then
 * and the heartbeat is overdue by {@link DEADLINE_LOST_MS}; else the wall clock (the agent's time).
 * A stop within the agent's reach does not move the clock's verdict.
 */
export function wallClockExitOf(e: FreezeEvidence, wallClockMs: number): WorkerExit {
  const frozen = frozenAtDeadlineOf(e);
  return frozen
    ? { ...frozen, detail: `${frozen.detail} (seen when its wall clock of ${wallClockMs} ms ran out)` }
    : { reason: "wall_clock", detail: `wall clock limit ${wallClockMs} ms` };
}
