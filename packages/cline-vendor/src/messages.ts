import { z } from "zod";

/**
 * Cline's chat messages, normalized. Both streams deliver them: `UiService.subscribeToPartialMessage`
 * as proto `ClineMessage` (enum names like `COMMAND_OUTPUT`, `TOOL_SAY`, zero values omitted), and
 * `StateService.subscribeToState` inside `state_json.clineMessages` as Cline's own objects
 * (`{type:"ask", ask:"command_output"}`). Both are parsed here into one shape.
 */

/** Every ask kind of the pinned core (proto enum `cline.ClineAsk`, lower-cased). */
export const CLINE_ASKS = [
  "followup",
  "plan_mode_respond",
  "command",
  "command_output",
  "completion_result",
  "tool",
  "api_req_failed",
  "resume_task",
  "resume_completed_task",
  "mistake_limit_reached",
  "browser_action_launch",
  "use_mcp_server",
  "new_task",
  "condense",
  "report_bug",
  "summarize_task",
  "act_mode_respond",
] as const;
export const ClineAsk = z.enum(CLINE_ASKS).describe("what Cline asks the user");
export type ClineAsk = z.infer<typeof ClineAsk>;

/** Every say kind of the pinned core (proto enum `cline.ClineSay`, lower-cased, `_SAY` suffix dropped). */
export const CLINE_SAYS = [
  "task",
  "error",
  "api_req_started",
  "api_req_finished",
  "text",
  "reasoning",
  "completion_result",
  "user_feedback",
  "user_feedback_diff",
  "api_req_retried",
  "command",
  "command_output",
  "tool",
  "shell_integration_warning",
  "browser_action_launch",
  "browser_action",
  "browser_action_result",
  "mcp_server_request_started",
  "mcp_server_response",
  "mcp_notification",
  "use_mcp_server",
  "diff_error",
  "deleted_api_reqs",
  "clineignore_error",
  "checkpoint_created",
  "load_mcp_documentation",
  "info",
  "task_progress",
  "error_retry",
  "generate_explanation",
  "hook_status",
  "hook_output_stream",
  "command_permission_denied",
  "conditional_rules_applied",
] as const;
export const ClineSay = z.enum(CLINE_SAYS).describe("what Cline tells the user");
export type ClineSay = z.infer<typeof ClineSay>;

/** One chat message, from either stream. */
export interface ClineMessage {
  /** Creation time (ms since epoch); Cline's identity for a message across updates. */
  readonly ts: number;
  readonly type: "ask" | "say";
  /** Set when type is "ask"; "unknown" for a kind this version of the code does not know. */
  readonly ask?: ClineAsk | "unknown";
  /** Set when type is "say"; "unknown" for a kind this version of the code does not know. */
  readonly say?: ClineSay | "unknown";
  readonly text: string;
  readonly reasoning?: string;
  /** True while the message is still streaming; only the final (non-partial) version is acted on. */
  readonly partial: boolean;
}

const enumName = (v: unknown) =>
  typeof v === "string" ? v.toLowerCase().replace(/_say$/, "") : typeof v === "number" ? v : undefined;

/** Proto `ClineMessage` (after the camelCase conversion, enums as names, defaults filled). */
const ProtoClineMessage = z.object({
  ts: z.coerce.number(),
  type: z.enum(["ASK", "SAY"]).default("ASK"),
  ask: z.string().optional(),
  say: z.string().optional(),
  text: z.string().nullish(),
  reasoning: z.string().nullish(),
  partial: z.boolean().nullish(),
});

/** A message from `state_json.clineMessages` (Cline's own objects). */
const StateClineMessage = z.object({
  ts: z.number(),
  type: z.enum(["ask", "say"]),
  ask: z.string().optional(),
  say: z.string().optional(),
  text: z.string().nullish(),
  reasoning: z.string().nullish(),
  partial: z.boolean().nullish(),
});

function normalize(m: {
  ts: number;
  type: "ask" | "say";
  ask?: string | undefined;
  say?: string | undefined;
  text?: string | null | undefined;
  reasoning?: string | null | undefined;
  partial?: boolean | null | undefined;
}): ClineMessage {
  const base = {
    ts: m.ts,
    type: m.type,
    text: m.text ?? "",
    partial: m.partial === true,
    ...(m.reasoning ? { reasoning: m.reasoning } : {}),
  };
  if (m.type === "ask") {
    const parsed = ClineAsk.safeParse(enumName(m.ask ?? "followup"));
    return { ...base, ask: parsed.success ? parsed.data : "unknown" };
  }
  const parsed = ClineSay.safeParse(enumName(m.say ?? "task"));
  return { ...base, say: parsed.success ? parsed.data : "unknown" };
}

/**
 * Parses a proto `ClineMessage` as the client delivers it (camelCase keys, enum names). Proto3
 * omits zero values, so a missing `ask` is FOLLOWUP and a missing `say` is TASK; the client
 * loads with `defaults: true` so they are filled in anyway.
 */
export function fromProtoMessage(raw: unknown): ClineMessage {
  const m = ProtoClineMessage.parse(raw);
  return normalize({ ...m, type: m.type === "ASK" ? "ask" : "say" });
}

/** Parses one entry of `state_json.clineMessages`. */
export function fromStateMessage(raw: unknown): ClineMessage {
  return normalize(StateClineMessage.parse(raw));
}

/** The parts of the core's state (`StateService` `state_json`) the driver reads. */
export const CoreState = z.object({
  clineMessages: z.array(z.unknown()).default([]),
  mode: z.string().optional(),
  autoApprovalSettings: z.object({ version: z.number().optional() }).loose().optional(),
  currentTaskItem: z.object({ id: z.string() }).loose().nullish(),
  version: z.string().optional(),
});
export type CoreState = z.infer<typeof CoreState>;

/**
 * Built once: a zod schema compiles its checks on its first parses, and `.loose()` makes a new
 * schema, so calling it per state post (each core posts its whole state after every message) cost
 * the runner's loop a compilation each time (issue 49).
 */
const LooseCoreState = CoreState.loose();

/** Parses a `state_json` string into the fields we use; other keys are kept untyped. */
export function parseStateJson(stateJson: string): CoreState & Record<string, unknown> {
  const parsed = LooseCoreState.parse(JSON.parse(stateJson));
  return parsed as CoreState & Record<string, unknown>;
}
