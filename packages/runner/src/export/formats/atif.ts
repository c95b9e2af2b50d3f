import type { TurnRecord } from "../../gateway/turn-log.js";
import { type ChatMessage, contentText } from "../../policy/chat.js";
import type { RunManifest, TrajectoryResult } from "../../run-format/schema.js";

/**
 * Harbor's Agent Trajectory Interchange Format of one trajectory, checked against harbor 0.25.0's
 * own model (harbor/models/trajectories: `Trajectory`, `Step`, `ToolCall`, `Observation`; validated by
 * `npm run conformance`): a system step (Cline's system prompt), the task prompt as the user step,
 * then one agent step per model call with its text, its tool calls (native ones, or the tool tags of
 * Cline's XML protocol), the observation the environment answered with (the messages the next call
 * added after the answer), and metrics (token counts, and the prompt/completion token ids and
 * logprobs when the upstream returned them). Calls that failed are left out. ATIF has no reward:
 * Harbor keeps it in the verifier's result, so the reward is `atifVerifierResult`'s, written beside
 * the trajectory. Pure.
 */

export const ATIF_VERSION = "ATIF-v1.4";

/** Cline's tools (its XML protocol writes a call as `<name><param>value</param>…</name>`). */
const CLINE_TOOLS = [
  "execute_command",
  "read_file",
  "write_to_file",
  "replace_in_file",
  "search_files",
  "list_files",
  "list_code_definition_names",
  "browser_action",
  "use_mcp_tool",
  "access_mcp_resource",
  "ask_followup_question",
  "attempt_completion",
  "plan_mode_respond",
  "new_task",
  "load_mcp_documentation",
  "web_fetch",
  "condense",
  "summarize_task",
  "report_bug",
  "new_rule",
  "focus_chain",
];

/** The tool calls written as Cline XML tags in an answer's text, in order. Pure. */
export function xmlToolCalls(text: string): { name: string; arguments: Record<string, string> }[] {
  const out: { name: string; arguments: Record<string, string> }[] = [];
  const re = new RegExp(`<(${CLINE_TOOLS.join("|")})>([\\s\\S]*?)</\\1>`, "g");
  for (const m of text.matchAll(re)) {
    const args: Record<string, string> = {};
    for (const p of m[2]!.matchAll(/<([a-z_]+)>([\s\S]*?)<\/\1>/g))
      args[p[1]!] = p[2]!.replace(/^\n|\n$/g, "");
    out.push({ name: m[1]!, arguments: args });
  }
  return out;
}

const parseArgs = (text: string): Record<string, unknown> => {
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
  } catch {
    return { raw: text };
  }
};

/** What the environment answered a call with: the messages after the last assistant message of the next call. Pure. */
function observationOf(next: TurnRecord | undefined): ChatMessage[] {
  if (!next) return [];
  const msgs = next.request.messages;
  let last = -1;
  msgs.forEach((m, i) => {
    if (m.role === "assistant") last = i;
  });
  return last < 0 ? [] : msgs.slice(last + 1).filter((m) => m.role === "user" || m.role === "tool");
}

export function atifTrajectory(m: RunManifest, r: TrajectoryResult, turns: readonly TurnRecord[]) {
  const answered = turns.filter((t) => t.status === "ok" && t.response);
  const first = answered[0] ?? turns[0];
  const system = first?.request.messages.find((x) => x.role === "system");
  const start = first?.startedAt ?? r.finishedAt;
  const head = [
    ...(system
      ? [{ source: "system" as const, timestamp: start, message: contentText(system.content) }]
      : []),
    { source: "user" as const, timestamp: start, message: r.prompt },
  ];
  const agent = answered.map((t, i) => {
    const res = t.response!;
    const tk = res.tokens;
    const calls =
      res.toolCalls.length > 0
        ? res.toolCalls.map((c) => ({
            tool_call_id: c.id,
            function_name: c.name,
            arguments: parseArgs(c.arguments),
          }))
        : xmlToolCalls(res.text).map((c, k) => ({
            tool_call_id: `call_${t.seq}_${k}`,
            function_name: c.name,
            arguments: c.arguments as Record<string, unknown>,
          }));
    const ids = new Set(calls.map((c) => c.tool_call_id));
    const results = observationOf(answered[i + 1]).map((o) => {
      const source = o.tool_call_id && ids.has(o.tool_call_id) ? o.tool_call_id : calls[0]?.tool_call_id;
      return { ...(source ? { source_call_id: source } : {}), content: contentText(o.content) };
    });
    return {
      source: "agent" as const,
      timestamp: t.startedAt,
      ...(res.model ? { model_name: res.model } : {}),
      message: res.text,
      ...(res.reasoning ? { reasoning_content: res.reasoning } : {}),
      ...(calls.length > 0 ? { tool_calls: calls } : {}),
      ...(results.length > 0 ? { observation: { results } } : {}),
      metrics: {
        ...(res.usage
          ? { prompt_tokens: res.usage.promptTokens, completion_tokens: res.usage.completionTokens }
          : {}),
        ...(tk?.promptIds ? { prompt_token_ids: tk.promptIds } : {}),
        ...(tk?.ids ? { completion_token_ids: tk.ids } : {}),
        ...(tk?.logprobs ? { logprobs: tk.logprobs } : {}),
      },
      extra: { call: t.seq, ...(res.finishReason ? { finish_reason: res.finishReason } : {}) },
    };
  });
  const steps = [...head, ...agent].map((s, i) => ({ step_id: i + 1, ...s }));
  const sum = (f: (t: TurnRecord) => number | undefined) => answered.reduce((n, t) => n + (f(t) ?? 0), 0);
  return {
    schema_version: ATIF_VERSION,
    session_id: r.trajectoryId,
    agent: {
      name: "cline",
      version: m.provenance.cline.version,
      ...(answered[0]?.request.model ? { model_name: answered[0].request.model } : {}),
      extra: { policy: r.policy },
    },
    steps,
    final_metrics: {
      total_prompt_tokens: sum((t) => t.response?.usage?.promptTokens),
      total_completion_tokens: sum((t) => t.response?.usage?.completionTokens),
      total_steps: steps.length,
    },
    extra: {
      run_id: m.runId,
      task_id: r.taskId,
      outcome: r.outcome,
      flakegym_version: m.provenance.flakegymVersion,
    },
  };
}

/**
 * The trajectory's reward as Harbor records a trial's (`VerifierResult`: `rewards`, one entry per
 * reward name): `reward`, each scored term, and — for an imported Harbor task whose verifier wrote
 * reward.json — every key of it as written (multi-reward; `reward` and the term names stay ours
 * when a key repeats them); null rewards when the machinery failed. Pure.
 */
export function atifVerifierResult(r: TrajectoryResult) {
  if (r.reward === null) return { rewards: null };
  const terms = Object.fromEntries(
    (r.score?.terms ?? []).flatMap((t) => (t.value === null ? [] : [[t.name, t.value] as const])),
  );
  return { rewards: { ...(r.score?.evalCmd?.rewards ?? {}), reward: r.reward, ...terms } };
}
