import type { GatewayVerdict, OutcomeEvidence } from "../rollout/classify-outcome.js";
import type { Outcome } from "../run-format/schema.js";
import type { WorkerLimit } from "../workers/types.js";

/**
 * A stage call ends as the rollout pipeline's one `Outcome`, decided by its one classifier
 * (`classifyOutcome`, rollout/classify-outcome.ts). This module only turns what a stage's run was
 * seen doing into that classifier's three witnesses (pure): the stage script is the driver, the
 * sandbox's exit the worker, and the call's gateway route the gateway.
 */
export interface StageEvidence {
  readonly exitCode: number;
  readonly timedOut: boolean;
  /** A limit the worker enforced (memory, pids, cpu_time, …). */
  readonly limit?: WorkerLimit;
  readonly sandboxKilled?: boolean;
  /** The sandbox could not run the stage (its start or exec failed): what went wrong. */
  readonly infra?: string;
  /** The call's max_total_seconds deadline fired. */
  readonly totalExpired: boolean;
  readonly maxCmdSeconds: number;
  /** The gateway's verdict on the call's route (rollout calls with a policy). */
  readonly gateway?: GatewayVerdict;
}

/**
 * What the stage's own run says (the driver's outcome): the contract's time limits are `timeout`s —
 * `max_cmd_seconds` the stage's wall clock, `max_total_seconds` the call's deadline — a sandbox
 * that could not run it `infra_error`, a non-zero exit the stage program's failure (`agent_error`).
 */
export function stageDriverOutcome(e: StageEvidence): Outcome {
  if (e.totalExpired) {
    return {
      kind: "timeout",
      limit: "caller_deadline",
      detail: "the call ran longer than its max_total_seconds",
    };
  }
  if (e.infra !== undefined) return { kind: "infra_error", detail: `the sandbox failed: ${e.infra}` };
  if (e.timedOut) {
    return {
      kind: "timeout",
      limit: "wall_clock",
      detail: `the stage script ran longer than its max_cmd_seconds (${e.maxCmdSeconds} s)`,
    };
  }
  if (e.exitCode !== 0) return { kind: "agent_error", detail: `the stage script exited with ${e.exitCode}` };
  return { kind: "completed", detail: "the stage script exited with 0" };
}

/** The classifier's witnesses of one stage run (pure). */
export function stageOutcomeEvidence(e: StageEvidence): OutcomeEvidence {
  // exec reports its own timeout as the wall_clock limit: that is the stage's max_cmd_seconds
  const sandboxLimit = e.limit === "wall_clock" && e.timedOut ? undefined : e.limit;
  const workerExit = sandboxLimit
    ? { reason: sandboxLimit, detail: `the sandbox's ${sandboxLimit} limit was hit` }
    : e.sandboxKilled
      ? { reason: "crashed" as const, detail: "the sandbox was killed from outside" }
      : undefined;
  return {
    driver: stageDriverOutcome(e),
    ...(workerExit ? { workerExit } : {}),
    ...(e.gateway ? { gateway: e.gateway } : {}),
  };
}
