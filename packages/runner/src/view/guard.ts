import { timingSafeEqual } from "node:crypto";
import { decodePercent } from "../text/percent-decode.js";

/**
 * The checks every request to `flakegym view` passes before anything is read. Pure.
 * - Host: only a loopback name with the server's own port (a DNS-rebinding page gets refused);
 * - token: the random token of the printed URL, as `?t=` or the `x-flakegym-token` header;
 * - path: the raw path may not hold `..`, encoded slashes or backslashes, or `%00`.
 */
export type GuardVerdict =
  | { readonly ok: true; readonly path: string; readonly query: URLSearchParams }
  | { readonly ok: false; readonly status: 400 | 403 | 421; readonly reason: string };

export interface GuardRequest {
  readonly host: string | undefined;
  readonly url: string | undefined;
  readonly tokenHeader: string | undefined;
}

const LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"];

/** Whether a Host header names this loopback server (`127.0.0.1:<port>`, `localhost:<port>`). */
export function isLoopbackHost(host: string | undefined, port: number): boolean {
  if (!host) return false;
  return LOOPBACK_HOSTS.some((h) => host.toLowerCase() === `${h}:${port}`);
}

/** Constant-time token comparison. */
export function tokenMatches(given: string | null | undefined, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Whether a raw request path is free of traversal tricks (checked before any decoding). */
export function isCleanRawPath(rawPath: string): boolean {
  if (!rawPath.startsWith("/")) return false;
  if (/%2f|%5c|%00|%2e|\\/i.test(rawPath)) return false;
  return !rawPath.split("/").some((s) => s === ".." || s === ".");
}

export function guardRequest(req: GuardRequest, port: number, token: string): GuardVerdict {
  if (!isLoopbackHost(req.host, port))
    return { ok: false, status: 421, reason: `Host '${req.host ?? ""}' is not this loopback server` };
  const raw = req.url ?? "/";
  const q = raw.indexOf("?");
  const rawPath = q < 0 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  if (!isCleanRawPath(rawPath))
    return { ok: false, status: 400, reason: "path holds '..' or an encoded separator" };
  if (!tokenMatches(req.tokenHeader ?? query.get("t"), token))
    return { ok: false, status: 403, reason: "missing or wrong token: open the URL `flakegym view` printed" };
  const path = decodePercent(rawPath);
  if (path === undefined) return { ok: false, status: 400, reason: "path is not valid percent-encoding" };
  return { ok: true, path, query };
}
