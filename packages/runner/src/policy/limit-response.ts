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
