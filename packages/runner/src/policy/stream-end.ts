import { UpstreamError } from "./upstream.js";

/**
 * Why a model server's stream that ended cleanly is no answer (undefined: it is one): it ended
 * before its first event (`started` false: headers, comments, pings, nothing else), or before the
 * answer finished (no finish reason and no end marker — `[DONE]`, `message_stop`). Either way the
 * server's fault, an UpstreamError — never an empty answer handed to the agent as if it were the
 * model's (Cline then reports "the task was interrupted", an agent_error). Pure.
 */
export function streamEndProblem(
  who: string,
  s: { readonly started: boolean; readonly finished: boolean },
): UpstreamError | undefined {
  if (!s.started) return new UpstreamError(`${who} ended its stream without any answer event (no data)`, 502);
  if (!s.finished)
    return new UpstreamError(
      `${who} ended its stream before the answer finished (no finish reason and no end marker)`,
      502,
    );
  return undefined;
}
