import { formatWait } from "../duration.js";
import type { NomadClientConfig } from "./config.js";
import { NOT_SENT_CODES } from "./errors.js";
import type { QueryOptions, RequestSpec } from "./request.js";

/**
 * The decisions of one request core call, pure: where it goes, how long it may take, what counts
 * as success and when it may be resent. request.ts carries them out.
 */

/** Extra deadline over a blocking query's wait: the server adds up to wait/16 of jitter. */
const BLOCKING_SLACK_MS = 10_000;

/** What a call needs of the config to be planned. */
export type PlanConfig = Pick<NomadClientConfig, "address" | "namespace" | "region" | "timeoutMs">;

export interface CallPlan {
  readonly url: URL;
  /** The path and query, as errors name it. */
  readonly path: string;
  readonly expected: readonly number[];
  readonly idempotent: boolean;
  /** Deadline of the whole call, retries included. */
  readonly timeoutMs: number;
  /** What that deadline is called where the user sets it. */
  readonly limit: string;
  readonly body: string | undefined;
}

/** The URL of a call: the config's base path, region and namespace (the call's own win), blocking and spec query. */
export function urlFor(config: PlanConfig, spec: RequestSpec, opts: QueryOptions): URL {
  const base = new URL(config.address);
  const u = new URL(base.origin);
  u.pathname = base.pathname.replace(/\/$/, "") + spec.path;
  const ns = opts.namespace ?? config.namespace;
  const region = opts.region ?? config.region;
  if (region) u.searchParams.set("region", region);
  if (ns) u.searchParams.set("namespace", ns);
  if (opts.index !== undefined) u.searchParams.set("index", String(opts.index));
  if (opts.waitMs !== undefined) u.searchParams.set("wait", formatWait(opts.waitMs));
  for (const [k, v] of Object.entries(spec.query ?? {})) {
    if (v === undefined) continue;
    if (Array.isArray(v)) for (const item of v) u.searchParams.append(k, item);
    else u.searchParams.set(k, String(v));
  }
  return u;
}

/** The deadline of a call and its name: the caller's, or the client's plus a blocking query's wait. */
export function callTimeout(config: PlanConfig, opts: QueryOptions): { timeoutMs: number; limit: string } {
  const blockingMs = opts.index !== undefined ? (opts.waitMs ?? 300_000) : 0;
  const timeoutMs = Math.ceil(
    opts.timeoutMs ?? config.timeoutMs + (blockingMs ? blockingMs + blockingMs / 16 + BLOCKING_SLACK_MS : 0),
  );
  const limit =
    opts.timeoutMs === undefined
      ? "the Nomad client's timeoutMs"
      : (opts.timeoutName ?? "the call's timeoutMs");
  return { timeoutMs, limit };
}

export function planCall(config: PlanConfig, spec: RequestSpec, opts: QueryOptions): CallPlan {
  const url = urlFor(config, spec, opts);
  return {
    url,
    path: url.pathname + (url.search ? url.search : ""),
    expected: spec.expected ?? [200],
    idempotent: spec.idempotent ?? (spec.method === "GET" || spec.method === "DELETE"),
    ...callTimeout(config, opts),
    body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
  };
}

/** The pause before try `attempt` (2, 3...): exponential, capped, half of it jittered by `random` in [0, 1). */
export function backoffMs(
  retry: Pick<NomadClientConfig["retry"], "baseDelayMs" | "maxDelayMs">,
  attempt: number,
  random: number,
): number {
  const backoff = Math.min(retry.maxDelayMs, retry.baseDelayMs * 2 ** (attempt - 2));
  return backoff * (0.5 + random / 2);
}

/** A failed connection is resent when the call is idempotent or the request never left. */
export function resendAfterConnectError(idempotent: boolean, errno: string | undefined): boolean {
  return idempotent || (errno !== undefined && NOT_SENT_CODES.has(errno));
}

/**
 * A safe call reset on a keep-alive socket the pool had kept idle is resent on a fresh connection:
 * the server closed the socket as the request went out (its idle timeout raced our reuse). Only
 * for idempotent calls: a reset request may have reached the server.
 */
export function resendOnFreshSocket(
  idempotent: boolean,
  reusedSocket: boolean,
  errno: string | undefined,
): boolean {
  return idempotent && reusedSocket && (errno === "ECONNRESET" || errno === "EPIPE");
}

/** An unexpected status is resent only for an idempotent call, and only on 429 or 5xx. */
export function resendAfterStatus(idempotent: boolean, status: number): boolean {
  return idempotent && (status === 429 || status >= 500);
}

/** What to check when the agent cannot be reached: TLS settings on a TLS failure, else the address. */
export function connectHint(errno: string | undefined, message: string, address: string): string {
  return /CERT|SSL|TLS|self.signed/i.test(String(errno) + message)
    ? "TLS failed: check NOMAD_CACERT, NOMAD_CLIENT_CERT/KEY and NOMAD_TLS_SERVER_NAME"
    : `is a Nomad agent listening at ${address}? (set NOMAD_ADDR)`;
}
