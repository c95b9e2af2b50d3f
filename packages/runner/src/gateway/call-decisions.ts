import { UpstreamError } from "../policy/upstream.js";
import { runSecrets } from "../redact/redactor.js";
import type { ClientRequest } from "./client-request.js";
import type { TurnRecord, TurnStatus } from "./turn-log.js";
import type { AnsweredCall, Entry, GatewayTerminal } from "./types.js";

/**
 * The decisions of one model call (pure): whether it is refused, how its failure is counted and
 * answered, what its turn line holds. serve-call.ts acts on them.
 */

export class WatchdogTimeout extends Error {
  constructor(
    readonly which: "silence" | "total" | "deadline",
    ms: number,
  ) {
    super(
      which === "silence"
        ? `upstream sent no event for ${ms} ms (silenceTimeoutMs; bytes that never complete an event do not count)`
        : which === "total"
          ? `upstream call took longer than ${ms} ms (totalTimeoutMs)`
          : `upstream was still answering when the trajectory's time ran out (deadlineAt; the call had run ${ms} ms): the model server's time, not the agent's`,
    );
  }
}

/** Why a call is refused before it is forwarded, and the budget it spent (none: the trajectory had ended). */
export interface CallRefusal {
  readonly message: string;
  /** The budget spent; undefined when the trajectory had already ended (it is not ended again). */
  readonly limit: GatewayTerminal["limit"] | undefined;
}

/** Whether call `seq` is refused (pure): its trajectory ended, or a budget is spent. */
export function refusalOf(
  e: Pick<Entry, "id" | "limits" | "terminal" | "completionTokens">,
  seq: number,
): CallRefusal | undefined {
  if (e.terminal)
    return {
      message: `trajectory '${e.id}' was ended by the gateway (${e.terminal.kind}: ${e.terminal.message})`,
      limit: undefined,
    };
  if (e.limits.maxRequests !== undefined && seq > e.limits.maxRequests)
    return {
      message: `trajectory '${e.id}' exceeded maxRequests=${e.limits.maxRequests} (call ${seq} refused)`,
      limit: "model_requests",
    };
  if (e.limits.maxCompletionTokens !== undefined && e.completionTokens >= e.limits.maxCompletionTokens)
    return {
      message: `trajectory '${e.id}' spent its maxCompletionTokens=${e.limits.maxCompletionTokens} (${e.completionTokens} sampled; call ${seq} refused)`,
      limit: "completion_tokens",
    };
  return undefined;
}

/** How a call that failed is counted, logged and answered, and whether it ends its trajectory. */
export interface CallFailure {
  readonly turn: Exclude<TurnStatus, "ok" | "refused">;
  readonly httpStatus: number;
  readonly type: "timeout_error" | "upstream_error" | "aborted";
  readonly message: string;
  /** Counted as failed; `in_a_row` also towards maxConsecutiveFailures. */
  readonly counts: false | "failed" | "in_a_row";
  /** The trajectory's end, given its failures in a row once this one is counted. */
  readonly ends?: (inARow: number) => { kind: "timeout" | "policy_error"; message: string } | undefined;
}

/**
 * Classifies a call's failure (pure): a watchdog ends the trajectory as timeout; an upstream error
 * (or a fault of the gateway's own) is the policy's, and ends it when terminal or after
 * maxConsecutiveFailures in a row; an abort (client gone, trajectory ended or unregistered, gateway
 * closing) is not counted.
 */
export function callFailure(
  reason: unknown,
  aborted: boolean,
  e: Pick<Entry, "id" | "limits">,
  seq: number,
): CallFailure {
  const max = e.limits.maxConsecutiveFailures;
  const at = `trajectory '${e.id}' call ${seq}`;
  if (reason instanceof WatchdogTimeout) {
    const message = `${at}: ${reason.message}`;
    const ends = () => ({ kind: "timeout" as const, message });
    return { turn: "timeout", httpStatus: 504, type: "timeout_error", message, counts: "failed", ends };
  }
  if (reason instanceof UpstreamError) {
    const message = `${at}: ${reason.message}`;
    const httpStatus = reason.status >= 400 && reason.status < 600 ? reason.status : 502;
    const ends = (inARow: number) =>
      reason.terminal
        ? { kind: "policy_error" as const, message }
        : inARow >= max
          ? {
              kind: "policy_error" as const,
              message: `${inARow} upstream failures in a row; last: ${message}`,
            }
          : undefined;
    return { turn: "upstream_error", httpStatus, type: "upstream_error", message, counts: "in_a_row", ends };
  }
  if (aborted) {
    const why =
      reason instanceof Error ? reason.message : String((reason as GatewayTerminal)?.message ?? reason);
    return {
      turn: "aborted",
      httpStatus: 503,
      type: "aborted",
      message: `call ${seq} aborted: ${why}`,
      counts: false,
    };
  }
  const message = `${at}: gateway fault: ${(reason as Error)?.message ?? String(reason)}`;
  const ends = (inARow: number) => (inARow >= max ? { kind: "policy_error" as const, message } : undefined);
  return {
    turn: "upstream_error",
    httpStatus: 502,
    type: "upstream_error",
    message,
    counts: "in_a_row",
    ends,
  };
}

/** A trajectory's failure counters once a failure counted as `counts` is added (pure). */
export function failureCounts(
  counts: CallFailure["counts"],
  before: Pick<Entry, "failed" | "consecutiveFailures">,
): { failed: number; consecutiveFailures: number } {
  if (!counts) return { failed: before.failed, consecutiveFailures: before.consecutiveFailures };
  return {
    failed: before.failed + 1,
    consecutiveFailures: before.consecutiveFailures + (counts === "in_a_row" ? 1 : 0),
  };
}

/** What a turn line says of one call (pure); `extra` adds or replaces fields (response, error, latency). */
export function turnRecordOf(
  call: {
    readonly trajectoryId: string;
    readonly seq: number;
    readonly startedAt: Date;
    readonly protocol: TurnRecord["protocol"];
    readonly upstream: string;
    readonly client: ClientRequest;
    readonly totalMs: number;
  },
  status: TurnStatus,
  extra: Partial<TurnRecord>,
): TurnRecord {
  return {
    v: 1,
    trajectoryId: call.trajectoryId,
    seq: call.seq,
    startedAt: call.startedAt.toISOString(),
    protocol: call.protocol,
    stream: call.client.raw["stream"] === true,
    upstream: call.upstream,
    status,
    request: call.client.request,
    latency: { firstByteMs: null, totalMs: call.totalMs },
    ...extra,
  };
}

/** The id of a call's answer, as each protocol names its messages (pure). */
export function responseIdOf(protocol: TurnRecord["protocol"], trajectoryId: string, seq: number): string {
  return `${protocol === "anthropic" ? "msg" : "chatcmpl"}-${trajectoryId}-${seq}`;
}

/** Milliseconds to two decimals, as the turn log's latencies are written. */
export const roundMs = (ms: number) => Math.round(ms * 100) / 100;

/**
 * The trajectory's last call the model server answered, after a call ended with `status`: the
 * call itself when the server answered it (ok, upstream_error, timeout; its error redacted as its
 * turn line is), else the one before (refused and aborted calls never reached it, or were ours).
 * Pure but for the run's secrets.
 */
export function answeredCallOf(
  status: TurnStatus,
  error: string | undefined,
  before: AnsweredCall | undefined,
): AnsweredCall | undefined {
  if (status !== "ok" && status !== "upstream_error" && status !== "timeout") return before;
  return { status, ...(error !== undefined ? { error: runSecrets.text(error) } : {}) };
}
