import type { PostResponse } from "./http-post.js";

/**
 * An upstream that answers 429 or 503 with `Retry-After` is waited for, as it asks, within a
 * bound: each wait at most `maxWaitMs`, all waits of one call at most `budgetMs`, at most
 * `maxRetries` retries. A wait past the bound is not waited: the answer goes back as it is (the
 * call fails naming the status). Decisions are pure; `postHonouringRetryAfter` only acts on them.
 */

export interface RetryAfterBound {
  readonly maxRetries: number;
  /** The longest single wait. */
  readonly maxWaitMs: number;
  /** The most one call waits in all. */
  readonly budgetMs: number;
}

export const DEFAULT_RETRY_AFTER_BOUND: RetryAfterBound = {
  maxRetries: 4,
  maxWaitMs: 30_000,
  budgetMs: 60_000,
};

/** Statuses whose Retry-After is honoured. */
const RETRYABLE = new Set([429, 503]);

/**
 * The wait a `Retry-After` value asks for, in ms: delay-seconds (`"2"`, `"1.5"`) or an HTTP-date
 * (relative to `nowMs`; a past date is 0). Undefined when absent or not either form. Pure.
 */
export function parseRetryAfter(
  value: string | readonly string[] | undefined,
  nowMs: number,
): number | undefined {
  const v = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!v) return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  if (!/[A-Za-z]/.test(v)) return undefined;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

/** Whether (and how long) to wait before retrying this answer; undefined: do not retry. Pure. */
export function retryAfterWait(o: {
  readonly status: number;
  readonly retryAfter: string | readonly string[] | undefined;
  readonly nowMs: number;
  /** Retries already made for this call. */
  readonly retries: number;
  /** What this call has already waited. */
  readonly waitedMs: number;
  readonly bound: RetryAfterBound;
  /**
   * When the trajectory's time ends (epoch ms): a wait that would pass it is not waited (the
   * trajectory would end in it as a timeout, blamed on the agent, for the model server's refusal).
   */
  readonly deadlineAt?: number;
}): number | undefined {
  if (!RETRYABLE.has(o.status) || o.retries >= o.bound.maxRetries) return undefined;
  const wait = parseRetryAfter(o.retryAfter, o.nowMs);
  if (wait === undefined || wait > o.bound.maxWaitMs || o.waitedMs + wait > o.bound.budgetMs)
    return undefined;
  if (o.deadlineAt !== undefined && o.nowMs + wait >= o.deadlineAt) return undefined;
  return wait;
}

/** Sleeps `ms`, or rejects with the signal's reason once it aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    const t = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Reads a refused answer's body away (at most 64 KiB; a longer one is cut, its socket dropped). */
async function drain(res: PostResponse): Promise<void> {
  let n = 0;
  try {
    for await (const chunk of res.body) {
      n += chunk.length;
      if (n > 65_536) break;
    }
  } catch {
    // a body that fails to read changes nothing: the call is posted again
  }
}

/**
 * Posts, and posts again after each Retry-After the bound (and the trajectory's `deadlineAt`, epoch
 * ms) allows; returns the last answer.
 */
export async function postHonouringRetryAfter(
  post: () => Promise<PostResponse>,
  signal: AbortSignal,
  deadlineAt?: number,
  bound: RetryAfterBound = DEFAULT_RETRY_AFTER_BOUND,
): Promise<PostResponse> {
  let waitedMs = 0;
  for (let retries = 0; ; retries++) {
    const res = await post();
    const wait = retryAfterWait({
      status: res.status,
      retryAfter: res.headers["retry-after"],
      nowMs: Date.now(),
      retries,
      waitedMs,
      bound,
      ...(deadlineAt !== undefined ? { deadlineAt } : {}),
    });
    if (wait === undefined) return res;
    await drain(res);
    await sleep(wait, signal);
    waitedMs += wait;
  }
}
