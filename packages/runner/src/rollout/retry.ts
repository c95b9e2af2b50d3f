import { match } from "ts-pattern";
import { FlakegymError, UsageError } from "../errors.js";
import type { Outcome } from "../run-format/schema.js";

/**
 * Whether a failed agent attempt runs again (pure). Only the machinery's own failures are retried:
 * an `infra_error` outcome, or an error thrown by the wiring — except errors that would fail the
 * same way every time (bad input: a usage error, a task the policy cannot run). A limit, a timeout,
 * the policy's or the agent's failure is the trajectory's result, never retried.
 */
export type AttemptEnd = { readonly outcome: Outcome } | { readonly error: unknown };

/** Error codes that say the input is wrong, so another attempt fails the same way. */
export const NOT_RETRYABLE_CODES: readonly string[] = ["E_USAGE", "E_NO_REFERENCE", "E_WORKER_SPEC"];

export function isRetryable(end: AttemptEnd): boolean {
  if ("error" in end) {
    if (end.error instanceof UsageError) return false;
    return !(end.error instanceof FlakegymError && NOT_RETRYABLE_CODES.includes(end.error.code));
  }
  return match(end.outcome)
    .with({ kind: "infra_error" }, (o) => o.cancelled !== true)
    .with(
      { kind: "completed" },
      { kind: "limits_exceeded" },
      { kind: "timeout" },
      { kind: "policy_error" },
      { kind: "agent_error" },
      () => false,
    )
    .exhaustive();
}

/** Retry after attempt `n` (0-based) ended this way, with `maxRetries` allowed? */
export function shouldRetry(end: AttemptEnd, n: number, maxRetries: number): boolean {
  return n < maxRetries && isRetryable(end);
}
