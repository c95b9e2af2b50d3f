import { z } from "zod";

/**
 * Which limit ended a task (for `limits_exceeded` and `timeout`): the driver's own (wall_clock,
 * idle, model_requests, tool_calls, caller_deadline), the policy gateway's (model_requests,
 * completion_tokens) and the worker's (wall_clock, cpu_time, memory, pids, disk).
 */
export const LimitName = z
  .enum([
    "wall_clock",
    "idle",
    "model_requests",
    "completion_tokens",
    "tool_calls",
    "memory",
    "pids",
    "cpu_time",
    "disk",
    "caller_deadline",
  ])
  .describe("the limit that ended the task");
export type LimitName = z.infer<typeof LimitName>;

const detail = z.string().describe("human-readable explanation of how the task ended");

/**
 * Every way a task (one trajectory) can end. Always a value, never an exception; always written
 * out with the trajectory's artifacts. The runner maps it to a reward and an exit status.
 */
export const Outcome = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z.literal("completed").describe("the agent called its completion tool"),
      detail,
      result: z.string().optional().describe("the agent's completion text"),
    })
    .strict(),
  z
    .object({
      kind: z
        .literal("limits_exceeded")
        .describe("a budget was spent (model requests, tool calls, tokens) or a resource limit hit"),
      detail,
      limit: LimitName,
    })
    .strict(),
  z
    .object({
      kind: z.literal("timeout").describe("wall clock, idle time or the caller's deadline ran out"),
      detail,
      limit: LimitName,
    })
    .strict(),
  z
    .object({
      kind: z
        .literal("policy_error")
        .describe("the model server failed (HTTP errors, broken streams, silence, bad answers)"),
      detail,
    })
    .strict(),
  z
    .object({
      kind: z
        .literal("agent_error")
        .describe(
          "Cline gave up (mistake limit, interrupted task, unhandled ask); for an environment-API stage, its script exited non-zero",
        ),
      detail,
      ask: z.string().optional().describe("the ask that ended the task"),
    })
    .strict(),
  z
    .object({
      kind: z.literal("infra_error").describe("the core, its streams or the caller failed; retryable"),
      detail,
      cancelled: z.boolean().optional().describe("true when the caller aborted the task"),
    })
    .strict(),
]);
export type Outcome = z.infer<typeof Outcome>;
export const OUTCOME_KINDS = [
  "completed",
  "limits_exceeded",
  "timeout",
  "policy_error",
  "agent_error",
  "infra_error",
] as const satisfies readonly Outcome["kind"][];
export const OutcomeKind = z.enum(OUTCOME_KINDS).describe("how a task ended");
export type OutcomeKind = z.infer<typeof OutcomeKind>;

/** Outcome for an aborted AbortSignal: a timeout reason means the caller's deadline, else a cancel. */
export function outcomeFromAbort(reason: unknown): Outcome {
  const name = reason instanceof Error || reason instanceof DOMException ? reason.name : undefined;
  const message = reason instanceof Error || reason instanceof DOMException ? reason.message : String(reason);
  if (name === "TimeoutError")
    return { kind: "timeout", limit: "caller_deadline", detail: `the caller's deadline passed (${message})` };
  return { kind: "infra_error", cancelled: true, detail: `cancelled by the caller (${message})` };
}
