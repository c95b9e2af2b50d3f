import { z } from "zod";

/**
 * How one stage call ended (pure classification). A limit is `limits_exceeded` naming it, the model
 * server's fault `policy_error`, the stage script's own failure `stage_error`, and only the
 * machinery's failures `infra_error`.
 */
export const StageOutcome = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("completed") }).strict(),
  z
    .object({
      kind: z.literal("limits_exceeded"),
      limit: z
        .string()
        .describe("the limit's name (max_cmd_seconds, max_total_seconds, memory, model_requests…)"),
      reason: z.string(),
    })
    .strict(),
  z.object({ kind: z.literal("policy_error"), reason: z.string() }).strict(),
  z.object({ kind: z.literal("stage_error"), reason: z.string() }).strict(),
  z.object({ kind: z.literal("infra_error"), reason: z.string() }).strict(),
]);
export type StageOutcome = z.infer<typeof StageOutcome>;

export interface StageEvidence {
  readonly exitCode: number;
  readonly timedOut: boolean;
  /** A limit the worker enforced (memory, pids, cpu_time, …). */
  readonly limit?: string;
  readonly sandboxKilled?: boolean;
  /** The call's max_total_seconds deadline fired. */
  readonly totalExpired: boolean;
  readonly maxCmdSeconds: number;
  /** Model calls of this stage the model server failed (a failing stage that saw one: policy_error). */
  readonly modelFailures?: number;
  /** The gateway ended the call's route (model server fault or a model budget). */
  readonly gateway?: {
    readonly kind: "limits_exceeded" | "timeout" | "policy_error" | "infra_error";
    readonly limit?: string;
    readonly message: string;
  };
}

export function classifyStage(e: StageEvidence): StageOutcome {
  if (e.gateway?.kind === "policy_error") return { kind: "policy_error", reason: e.gateway.message };
  if (e.gateway?.kind === "infra_error") return { kind: "infra_error", reason: e.gateway.message };
  if (e.gateway) {
    return { kind: "limits_exceeded", limit: e.gateway.limit ?? "model_silence", reason: e.gateway.message };
  }
  if (e.totalExpired)
    return { kind: "limits_exceeded", limit: "max_total_seconds", reason: "the call ran out of time" };
  if (e.timedOut) {
    return {
      kind: "limits_exceeded",
      limit: "max_cmd_seconds",
      reason: `the stage script ran longer than ${e.maxCmdSeconds} s`,
    };
  }
  if (e.limit)
    return { kind: "limits_exceeded", limit: e.limit, reason: `the sandbox's ${e.limit} limit was hit` };
  if (e.sandboxKilled) return { kind: "infra_error", reason: "the sandbox was killed from outside" };
  if (e.exitCode !== 0 && (e.modelFailures ?? 0) > 0) {
    return {
      kind: "policy_error",
      reason: `the model server failed ${e.modelFailures} call(s); the stage exited with ${e.exitCode}`,
    };
  }
  if (e.exitCode !== 0) return { kind: "stage_error", reason: `the stage script exited with ${e.exitCode}` };
  return { kind: "completed" };
}
