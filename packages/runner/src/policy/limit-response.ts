import type { UpstreamEvent } from "./chat.js";
import type { PostResponse } from "./http-post.js";
import { UpstreamError } from "./upstream.js";

/** The most a model server may send for one call unless configured (`--max-response-mb`). */
export const DEFAULT_MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
/** The bound on the configurable limit: one call's answer is never allowed more. */
export const MAX_RESPONSE_BYTES_CAP = 1024 * 1024 * 1024;

/**
 * A model server's answer was larger than the call may receive: the policy's fault, terminal (the
 * same request would get the same answer), so the trajectory ends as `policy_error` with this reason.
 */
export class ResponseTooLargeError extends UpstreamError {
  override readonly name = "ResponseTooLargeError";
  constructor(who: string, max: number) {
    super(
      `${who} sent more than ${max} bytes for one call (the response size limit, --max-response-mb): the answer was cut off`,
      502,
      { terminal: true },
    );
  }
}

/**
 * The answer itself — its text, reasoning and tool-call arguments — may be at most 1/16 of the
 * response size limit (1 MiB of the default 16 MiB): a real stream spends far more bytes on its
 * envelope (one JSON chunk per token, logprobs and ids) than on its content, so only an answer sent
 * in huge pieces meets this cap, and it is cut at the piece that passes it rather than after the
 * whole body has been relayed to the agent. Pure.
 */
export function answerCapOf(maxResponseBytes: number): number {
  return Math.max(64 * 1024, Math.floor(maxResponseBytes / 16));
}

/** The answer bytes one upstream event adds (text, reasoning, tool name and arguments). Pure. */
export function answerBytesOf(ev: UpstreamEvent): number {
  if (ev.type === "text" || ev.type === "reasoning") return Buffer.byteLength(ev.text);
  if (ev.type === "tool_call") return Buffer.byteLength(ev.arguments) + Buffer.byteLength(ev.name ?? "");
  return 0;
}

/** The answer passed {@link answerCapOf}: the policy's fault, terminal, like a too-large response. */
export class AnswerTooLargeError extends UpstreamError {
  override readonly name = "AnswerTooLargeError";
  constructor(max: number) {
    super(
      `the model's answer passed ${max} bytes of text and tool arguments for one call (1/16 of the response size limit, --max-response-mb): it was cut off`,
      502,
      { terminal: true },
    );
  }
}

async function* limited(body: AsyncIterable<Buffer>, max: number, who: string): AsyncGenerator<Buffer> {
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    // leaving the loop destroys the response: nothing more is read or kept
    if (size > max) throw new ResponseTooLargeError(who, max);
    yield chunk;
  }
}

/** The response with its body (and `text()`) cut off past `max` bytes by {@link ResponseTooLargeError}. */
export function limitResponse(res: PostResponse, max: number, who: string): PostResponse {
  const body = limited(res.body, max, who);
  return {
    ...res,
    body,
    text: async () => {
      const chunks: Buffer[] = [];
      for await (const c of body) chunks.push(c);
      return Buffer.concat(chunks).toString("utf8");
    },
  };
}
