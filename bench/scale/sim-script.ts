/**
 * What one simulated agent sends and says: a Cline-sized chat request per turn (its system prompt,
 * the task, every earlier answer and tool result), and the `state_json` the simulated core posts.
 * Pure and deterministic, so the unit tests can pin the sizes the bench claims.
 */

/** Cline's system prompt with its tool catalogue is ~40 KB; ours is filler of that size. */
export const SYSTEM_PROMPT_BYTES = 40 * 1024;
/** What a tool result (a file read, a command's output) adds to the history each turn. */
export const TOOL_RESULT_BYTES = 6 * 1024;

/** `bytes` of readable filler text, the same every call. */
export function filler(bytes: number, seed = "flakegym scale bench "): string {
  return seed.repeat(Math.ceil(bytes / seed.length)).slice(0, bytes);
}

const SYSTEM = filler(SYSTEM_PROMPT_BYTES, "You are Cline, a software engineer. Tools: ");
const TOOL_RESULT = filler(TOOL_RESULT_BYTES, "src/index.ts: export function f() {}\n");

export interface ChatMessage {
  readonly role: "system" | "user" | "assistant";
  readonly content: string;
}

/** The request body of turn `answers.length + 1`: system, the task, then answer/tool-result pairs. */
export function chatRequest(
  model: string,
  task: string,
  answers: readonly string[],
): Record<string, unknown> {
  const messages: ChatMessage[] = [
    { role: "system", content: SYSTEM },
    { role: "user", content: `<task>\n${task}\n</task>` },
  ];
  for (const a of answers) {
    messages.push({ role: "assistant", content: a });
    messages.push({ role: "user", content: `[tool result]\n${TOOL_RESULT}` });
  }
  return { model, messages, stream: true, stream_options: { include_usage: true } };
}

const SYSTEM_JSON = JSON.stringify({ role: "system", content: SYSTEM });
const TOOL_RESULT_JSON = JSON.stringify({ role: "user", content: `[tool result]\n${TOOL_RESULT}` });

/**
 * `JSON.stringify(chatRequest(...))`, byte for byte, from pieces serialized once: the harness
 * serves a thousand agents in one process, and serializing the 40 KB prompt again for every call
 * was its largest cost. Pure.
 */
export function chatRequestBody(model: string, task: string, answers: readonly string[]): string {
  const parts = [SYSTEM_JSON, JSON.stringify({ role: "user", content: `<task>\n${task}\n</task>` })];
  for (const a of answers) parts.push(JSON.stringify({ role: "assistant", content: a }), TOOL_RESULT_JSON);
  return (
    `{"model":${JSON.stringify(model)},"messages":[${parts.join(",")}],` +
    `"stream":true,"stream_options":{"include_usage":true}}`
  );
}

/** One of Cline's own message objects, as `state_json.clineMessages` holds them. */
export interface StateMessage {
  readonly ts: number;
  readonly type: "ask" | "say";
  readonly ask?: string;
  readonly say?: string;
  text: string;
  partial?: boolean;
}

/** The core's state as `getLatestState`/`subscribeToState` post it (Cline resends all of it each time). */
export function stateJson(o: {
  readonly messages: readonly StateMessage[];
  readonly taskId: string | undefined;
  readonly approvalVersion: number;
}): string {
  return JSON.stringify({
    version: "3.0.0-sim",
    mode: "act",
    autoApprovalSettings: { version: o.approvalVersion },
    currentTaskItem: o.taskId ? { id: o.taskId, task: "simulated" } : null,
    clineMessages: o.messages,
  });
}

/** One parsed server-sent event of a chat stream: text, usage, or the end. Pure. */
export function sseDelta(line: string): { text?: string; usage?: { in: number; out: number }; done?: true } {
  if (!line.startsWith("data: ")) return {};
  const data = line.slice(6).trim();
  if (data === "[DONE]") return { done: true };
  const v = JSON.parse(data) as {
    choices?: { delta?: { content?: string } }[];
    usage?: { prompt_tokens?: number; completion_tokens?: number };
  };
  const text = v.choices?.[0]?.delta?.content;
  return {
    ...(text ? { text } : {}),
    ...(v.usage ? { usage: { in: v.usage.prompt_tokens ?? 0, out: v.usage.completion_tokens ?? 0 } } : {}),
  };
}
