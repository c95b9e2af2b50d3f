import { match } from "ts-pattern";
import type { TurnRecord } from "../gateway/turn-log.js";
import type { GatewayTerminal } from "../gateway/types.js";
import type { LimitName, Outcome } from "../run-format/schema.js";
import { type AgentUsers, WORKER_LIMITS, type WorkerExit, type WorkerLimit } from "../workers/types.js";

/**
 * How a trajectory ended, decided once from everything that saw it end: the Cline driver's outcome,
 * the worker's exit (a limit it enforced, a crash) and the policy gateway's verdict (a budget it
 * refused, the model server failing). Pure; `agent-attempt.ts` gathers the evidence.
 */

/** What the policy gateway knows about a trajectory's model calls. */
export interface GatewayVerdict {
  /** Set when the gateway itself ended the trajectory (a budget, its watchdog, failing upstream). */
  readonly terminal?: Pick<GatewayTerminal, "kind" | "limit" | "message">;
  /** The model server's failure on the last call it answered, when that call failed. */
  readonly lastCallFailure?: string;
}

export interface OutcomeEvidence {
  /** The driver's outcome (what the Cline core was seen doing). */
  readonly driver: Outcome;
  /** How the worker ended, when it ended before (or as) the task did; `stopped` is ignored. */
  readonly workerExit?: WorkerExit;
  readonly gateway?: GatewayVerdict;
  /**
   * Who could reach the core and its helpers (issue 42): the worker's users, and whether the
   * runner saw the driver approve any command of the agent's. Absent: nothing is known (as apart).
   */
  readonly reach?: { readonly users: AgentUsers; readonly commandsRan: boolean };
}

/**
 * Whether the machinery's end (the core, its host or the supervisor died or stopped answering) is
 * the agent's doing: who could reach the dead or frozen process decides. Apart (two users), the
 * agent's commands could not signal, stop or ptrace it: the machine's fault. One user, once a
 * command of the agent's ran, they could: the policy's end, scored, never `infra_error`. Pure.
 */
export function agentCouldReach(reach: OutcomeEvidence["reach"]): boolean {
  return reach !== undefined && reach.users === "one" && reach.commandsRan;
}

/** The machinery's end blamed on the agent's commands that could reach it (see {@link agentCouldReach}). */
function reachedByAgent(what: string): Outcome {
  return {
    kind: "agent_error",
    detail: `${what}, after the agent's commands ran as the same user as the core (a sandbox of one user: they could signal, stop or ptrace it), so it is the policy's end, not the machine's`,
  };
}

const isWorkerLimit = (reason: WorkerExit["reason"]): reason is WorkerLimit =>
  (WORKER_LIMITS as readonly string[]).includes(reason);

/** A worker limit as an outcome: the wall clock is a `timeout`, every other limit `limits_exceeded`. */
export function outcomeOfWorkerLimit(limit: WorkerLimit, detail: string | undefined): Outcome {
  const text = `the worker hit its ${limit} limit${detail ? `: ${detail}` : ""}`;
  return limit === "wall_clock"
    ? { kind: "timeout", limit, detail: text }
    : { kind: "limits_exceeded", limit, detail: text };
}

/** The gateway's verdict when it ended the trajectory: its budgets are limits, the rest the model server's fault. */
function outcomeOfTerminal(t: NonNullable<GatewayVerdict["terminal"]>): Outcome {
  const detail = `policy gateway: ${t.message}`;
  return match(t.kind)
    .with(
      "limits_exceeded",
      (): Outcome => ({
        kind: "limits_exceeded",
        limit: t.limit ?? "model_requests",
        detail,
      }),
    )
    .with("timeout", "policy_error", (): Outcome => ({ kind: "policy_error", detail }))
    .with("infra_error", (): Outcome => ({ kind: "infra_error", detail }))
    .exhaustive();
}

/**
 * The trajectory's outcome. In order: a completion stands; a worker limit explains whatever the
 * core did after it (a killed core looks like a broken stream); so does a worker frozen from outside
 * (`infra_error`, whatever the core's clocks said) or stopped within the agent's reach
 * (`agent_error` once its commands ran, else `infra_error`); the gateway's verdict explains the
 * core giving up; the model server failing on the last call makes an agent or infra failure a
 * `policy_error`; a crashed worker or a core that stopped answering is `infra_error` — unless the
 * agent's commands could reach it ({@link agentCouldReach}: `agent_error`); otherwise the driver's outcome.
 */
export function classifyOutcome(e: OutcomeEvidence): Outcome {
  const { driver, workerExit, gateway } = e;
  if (driver.kind === "completed") return driver;
  // A "cancelled" driver outcome here is our own doing — the worker's exit or the gateway's verdict
  // aborted the task (a caller's Ctrl-C never gets classified) — so those witnesses explain it.
  if (workerExit && isWorkerLimit(workerExit.reason))
    return outcomeOfWorkerLimit(workerExit.reason, workerExit.detail);
  // frozen from outside (no heartbeat, a stop no code inside could make): whatever the core then
  // looked like — quiet, timed out, a dead stream — is the machine's doing
  // stopped within the agent's reach (one user): theirs once their commands ran, the machine's before
  if (workerExit?.reason === "frozen" && workerExit.withinReach === true && agentCouldReach(e.reach))
    return reachedByAgent(`the worker was ${workerExit.detail ?? "stopped"}`);
  if (workerExit?.reason === "frozen")
    return { kind: "infra_error", detail: `the worker was ${workerExit.detail ?? "frozen from outside"}` };
  if (gateway?.terminal) return outcomeOfTerminal(gateway.terminal);
  if (driver.kind === "policy_error" || driver.kind === "limits_exceeded" || driver.kind === "timeout")
    return driver;
  if (gateway?.lastCallFailure !== undefined) {
    return {
      kind: "policy_error",
      detail: `the model server failed on the last call (${gateway.lastCallFailure}); Cline then ended with ${driver.kind}: ${driver.detail}`,
    };
  }
  if (workerExit?.reason === "crashed" && agentCouldReach(e.reach))
    return reachedByAgent(`the worker crashed${workerExit.detail ? `: ${workerExit.detail}` : ""}`);
  if (driver.kind === "infra_error" && driver.cancelled !== true && agentCouldReach(e.reach))
    return reachedByAgent(driver.detail);
  if (workerExit?.reason === "crashed") {
    return {
      kind: "infra_error",
      detail: `the worker crashed${workerExit.detail ? `: ${workerExit.detail}` : ""} (the core saw: ${driver.detail})`,
    };
  }
  return driver;
}

/** The gateway's verdict from its status and the trajectory's turn log (pure). */
export function gatewayVerdictOf(
  terminal: GatewayTerminal | undefined,
  turns: readonly Pick<TurnRecord, "status" | "error">[],
): GatewayVerdict {
  // calls the model server answered (refused and aborted calls never reached it, or were ours)
  const last = turns
    .filter((t) => t.status === "ok" || t.status === "upstream_error" || t.status === "timeout")
    .at(-1);
  const failed = last && last.status !== "ok" ? (last.error ?? last.status) : undefined;
  return {
    ...(terminal ? { terminal } : {}),
    ...(failed !== undefined ? { lastCallFailure: failed } : {}),
  };
}

/**
 * How long to wait, once the driver has ended, for the worker to say it ended (ms). A limit kill
 * (OOM, pids, CPU, disk) is seen by the core first, as a dead stream, and by the worker's watchdog
 * up to one interval later; a completion or a limit the driver saw itself needs no wait.
 */
export function workerExitGraceMs(driver: Outcome): number {
  return match(driver.kind)
    .with("infra_error", () => 5_000)
    .with("agent_error", () => 2_000)
    .with("completed", "limits_exceeded", "timeout", "policy_error", () => 0)
    .exhaustive();
}

/** The `{kind, limit?, detail}` of an outcome, for metrics and the summary. */
export function reasonOf(o: Outcome): { kind: Outcome["kind"]; limit?: LimitName; detail: string } {
  return { kind: o.kind, ...("limit" in o ? { limit: o.limit } : {}), detail: o.detail };
}
