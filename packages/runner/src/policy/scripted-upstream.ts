import type { ScriptedTurn } from "@flakegym/cline-vendor";
import type { UpstreamEvent } from "./chat.js";
import { contentText } from "./chat.js";
import { nativeArguments, renderXmlToolCall } from "./cline-tools.js";
import type { PolicyUpstream, UpstreamCall } from "./upstream.js";
import { UpstreamError } from "./upstream.js";

/** Splits text into a few pieces so clients see a real stream. */
function pieces(text: string, n = 3): string[] {
  if (text.length <= n) return text.length > 0 ? [text] : [];
  const size = Math.ceil(text.length / n);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

const estimateTokens = (chars: number) => Math.max(1, Math.ceil(chars / 4));

/**
 * Replays a fixed list of assistant turns: the `scripted`, `gold` and `empty` policies. Each
 * trajectory has its own cursor (keyed by trajectory id), so one instance serves many trajectories.
 * Tool calls go out as native calls when the request offers tools, as Cline XML tags otherwise.
 * Asking past the last turn is a terminal error (the trajectory ends as `policy_error`).
 */
export class PlanUpstream implements PolicyUpstream {
  readonly secrets: readonly string[] = [];
  private readonly cursors = new Map<string, number>();

  constructor(
    readonly kind: "scripted" | "gold" | "empty",
    readonly id: string,
    private readonly turns: readonly ScriptedTurn[],
  ) {}

  /** How many turns the trajectory has consumed. */
  consumed(trajectoryId: string): number {
    return this.cursors.get(trajectoryId) ?? 0;
  }

  async *complete(call: UpstreamCall, signal: AbortSignal): AsyncGenerator<UpstreamEvent> {
    const index = this.cursors.get(call.trajectoryId) ?? 0;
    const turn = this.turns[index];
    if (!turn) {
      throw new UpstreamError(
        `${this.id} has ${this.turns.length} turn${this.turns.length === 1 ? "" : "s"}; model call ${call.seq} of trajectory ${call.trajectoryId} asked for turn ${index + 1}`,
        500,
        { terminal: true },
      );
    }
    this.cursors.set(call.trajectoryId, index + 1);
    const native = (call.request.tools?.length ?? 0) > 0;
    yield {
      type: "start",
      upstreamRequestId: `${this.kind}-${call.trajectoryId}-${call.seq}`,
      model: this.id,
    };
    const calls = "tool_calls" in turn ? turn.tool_calls : [];
    let text = turn.text ?? "";
    if (!native && calls.length > 0) {
      text = [text, ...calls.map(renderXmlToolCall)].filter((t) => t.length > 0).join("\n\n");
    }
    const promptChars = call.request.messages.reduce((n, m) => n + contentText(m.content).length, 0);
    const completionChars = text.length + calls.reduce((n, c) => n + nativeArguments(c).length, 0);
    yield {
      type: "usage",
      usage: turn.usage
        ? { promptTokens: turn.usage.prompt_tokens, completionTokens: turn.usage.completion_tokens }
        : { promptTokens: estimateTokens(promptChars), completionTokens: estimateTokens(completionChars) },
    };
    for (const p of pieces(text)) {
      if (signal.aborted) throw signal.reason;
      yield { type: "text", text: p };
    }
    if (native) {
      for (const [i, c] of calls.entries()) {
        const args = nativeArguments(c);
        const half = Math.ceil(args.length / 2);
        yield {
          type: "tool_call",
          index: i,
          id: `call_${call.seq}_${i}`,
          name: c.name,
          arguments: args.slice(0, half),
        };
        yield { type: "tool_call", index: i, arguments: args.slice(half) };
      }
    }
    yield { type: "finish", reason: native && calls.length > 0 ? "tool_calls" : "stop" };
  }
}
