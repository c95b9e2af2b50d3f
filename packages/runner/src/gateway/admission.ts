/**
 * Whether the gateway takes a model call at all, decided from its headers before a byte of its
 * body is read: a worker is hostile, so one trajectory must not make the gateway buffer many large
 * bodies at once. Pure.
 */

/** Calls one trajectory may have in flight (Cline makes one at a time; retries overlap briefly). */
export const DEFAULT_MAX_CALLS_PER_TRAJECTORY = 4;

export interface Refusal {
  readonly status: number;
  readonly message: string;
  readonly type: string;
}

export function admitCall(o: {
  readonly trajectoryId: string;
  /** Calls of this trajectory already admitted and not finished. */
  readonly inFlight: number;
  readonly maxInFlight: number;
  /** The request's Content-Length header, when it sent one. */
  readonly contentLength: string | undefined;
  readonly maxBody: number;
}): Refusal | undefined {
  if (o.contentLength !== undefined) {
    const n = Number(o.contentLength);
    if (!/^\d+$/.test(o.contentLength.trim()) || !Number.isSafeInteger(n)) {
      return {
        status: 400,
        message: `flakegym gateway: Content-Length '${o.contentLength}' is not a byte count`,
        type: "invalid_request_error",
      };
    }
    if (n > o.maxBody) {
      return {
        status: 413,
        message: `flakegym gateway: request body larger than ${o.maxBody} bytes`,
        type: "invalid_request_error",
      };
    }
  }
  if (o.inFlight >= o.maxInFlight) {
    return {
      status: 429,
      message: `flakegym gateway: trajectory '${o.trajectoryId}' already has ${o.inFlight} model calls in flight, the most it may (maxCallsPerTrajectory ${o.maxInFlight}); retry when one ends`,
      type: "rate_limit_error",
    };
  }
  return undefined;
}
