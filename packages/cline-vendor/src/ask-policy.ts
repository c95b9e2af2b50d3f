import { match } from "ts-pattern";
import { z } from "zod";
import type { ClineAsk } from "./messages.js";
import type { Outcome } from "./outcome.js";

/** How the driver answers Cline's asks. We approve ourselves instead of auto-approve (yolo): it is
 * faster (yolo sleeps 3.5 s after every edit) and keeps the default prompt. */
export const AskPolicy = z
  .object({
    approveTools: z.boolean().default(true).describe("approve file reads/edits (`tool` asks)"),
    approveCommands: z.boolean().default(true).describe("approve shell commands (`command` asks)"),
    approveBrowser: z.boolean().default(false).describe("approve launching a browser"),
    approveMcp: z.boolean().default(false).describe("approve MCP tool use"),
    followupReply: z
      .string()
      .min(1)
      .default(
        "I can't answer questions right now. Please proceed autonomously: make reasonable assumptions, finish the task, and then use attempt_completion.",
      )
      .describe("reply to the agent's follow-up questions"),
    maxApiRetries: z
      .number()
      .int()
      .min(0)
      .default(2)
      .describe(
        "retries granted after `api_req_failed` (each after Cline's own retries) before policy_error",
      ),
  })
  .strict();
export type AskPolicy = z.infer<typeof AskPolicy>;
export type AskPolicyInput = z.input<typeof AskPolicy>;

/** What to do about one (final, not yet answered) ask. */
export type AskDecision =
  | { readonly action: "approve" }
  | { readonly action: "deny" }
  | { readonly action: "reply"; readonly text: string }
  | { readonly action: "retry" }
  | { readonly action: "ignore" }
  | { readonly action: "end"; readonly outcome: Outcome; readonly answer?: "deny" };

export interface AskContext {
  /** `api_req_failed` asks seen in this task, including this one. */
  readonly apiFailures: number;
  /** The last completion text Cline said (for `completion_result`). */
  readonly completionText?: string;
}

/**
 * Decides how to answer an ask (pure). `text` is the ask's text (the error for api_req_failed).
 * Never answers `command_output`: answering it detaches the running command.
 */
export function decideAsk(
  ask: ClineAsk | "unknown",
  text: string,
  policy: AskPolicy,
  ctx: AskContext,
): AskDecision {
  const approveIf = (ok: boolean): AskDecision => (ok ? { action: "approve" } : { action: "deny" });
  const agentEnd = (detail: string): AskDecision => ({
    action: "end",
    outcome: { kind: "agent_error", detail, ask },
  });
  return match(ask)
    .with("completion_result", (): AskDecision => {
      const result = ctx.completionText ?? text;
      return {
        action: "end",
        outcome: {
          kind: "completed",
          detail: "the agent attempted completion",
          ...(result ? { result } : {}),
        },
      };
    })
    .with("tool", () => approveIf(policy.approveTools))
    .with("command", () => approveIf(policy.approveCommands))
    .with("browser_action_launch", () => approveIf(policy.approveBrowser))
    .with("use_mcp_server", () => approveIf(policy.approveMcp))
    .with("command_output", (): AskDecision => ({ action: "ignore" }))
    .with(
      "followup",
      "plan_mode_respond",
      "act_mode_respond",
      (): AskDecision => ({
        action: "reply",
        text: policy.followupReply,
      }),
    )
    .with("api_req_failed", (): AskDecision => {
      if (ctx.apiFailures <= policy.maxApiRetries) return { action: "retry" };
      return {
        action: "end",
        answer: "deny",
        outcome: {
          kind: "policy_error",
          detail: `the policy request failed ${ctx.apiFailures} time(s) after Cline's own retries (last error: ${firstLine(text)})`,
        },
      };
    })
    .with("mistake_limit_reached", () =>
      agentEnd(`Cline reached its consecutive-mistake limit: ${firstLine(text)}`),
    )
    .with("resume_task", "resume_completed_task", () =>
      agentEnd("the task was interrupted (Cline asks to resume it)"),
    )
    .with("condense", "summarize_task", (): AskDecision => ({ action: "approve" }))
    .with("new_task", "report_bug", (): AskDecision => ({ action: "deny" }))
    .with("unknown", () => agentEnd(`Cline asked something this driver does not know: ${firstLine(text)}`))
    .exhaustive();
}

/** The error message of an ask's text (Cline puts a JSON object with `message` there), else its first line. */
function firstLine(text: string): string {
  try {
    const parsed = JSON.parse(text) as { message?: unknown };
    if (typeof parsed.message === "string") text = parsed.message;
  } catch {
    // plain text
  }
  const line = text.split("\n").find((l) => l.trim().length > 0) ?? "";
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
