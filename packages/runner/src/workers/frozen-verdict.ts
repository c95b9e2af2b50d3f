import type { WorkerExit } from "./types.js";

/**
 * A worker frozen from outside, told apart from an agent that made no progress (issue 46). The
 * supervisor in every sandbox writes a heartbeat a second, whatever the agent does; when none came
 * for {@link HEARTBEAT_LOST_MS}, the worker looks for a freeze. Who could reach the frozen process
 * decides whose fault it is: a stop of something no code in the sandbox can signal (the sandbox's
 * host-side process, outside its pid namespace; a paused container) is the machine's — `frozen`,
 * `infra_error`, retried. A stop the agent's own commands could have made (the supervisor or the
 * core, same uid and pid namespace) is no evidence of anything outside: the agent's clocks decide.
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
}

/** Whether the heartbeat is overdue: one came once, and none for longer than `lostMs`. Pure. */
export const heartbeatLost = (ageMs: number | undefined, lostMs = HEARTBEAT_LOST_MS): ageMs is number =>
  ageMs !== undefined && ageMs > lostMs;

/** The worker's end when it is frozen from outside, else undefined (alive, or not provably frozen by the machine). Pure. */
export function frozenExitOf(e: FreezeEvidence, lostMs = HEARTBEAT_LOST_MS): WorkerExit | undefined {
  if (!heartbeatLost(e.heartbeatAgeMs, lostMs) || e.outsideFreeze === undefined) return undefined;
  return {
    reason: "frozen",
    detail: `frozen from outside its sandbox: no heartbeat from its supervisor for ${Math.round(e.heartbeatAgeMs / 1000)} s and ${e.outsideFreeze}, which no code inside can do`,
  };
}
