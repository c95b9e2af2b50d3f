import type { IncomingHttpHeaders } from "node:http";
import type { ClientProtocol } from "../policy/upstream.js";
import { decodePercent } from "../text/percent-decode.js";
import type { Refusal } from "./admission.js";

/**
 * Which endpoint a request asks for, and whether the gateway answers it at all, decided from its
 * method, path and headers before its body is read (pure). server.ts acts on the answers.
 */

const ROUTE = /^\/t\/([^/]+)\/v1\/(chat\/completions|messages)$/;

/** What a request's path names: the health check, a trajectory's endpoint, or nothing. */
export type RequestRoute =
  | { readonly kind: "health" }
  | { readonly kind: "call"; readonly trajectoryId: string; readonly protocol: ClientProtocol }
  | { readonly kind: "none"; readonly protocol: ClientProtocol }
  /** A trajectory route whose id is not valid percent-encoding (a 400, never a fault). */
  | { readonly kind: "malformed"; readonly protocol: ClientProtocol };

/** The route of a request URL (its query ignored); a bad %-escape in the id is `malformed`. */
export function routeOf(url: string): RequestRoute {
  const pathname = url.split("?")[0]!;
  if (pathname === "/healthz") return { kind: "health" };
  const m = ROUTE.exec(pathname);
  if (!m) return { kind: "none", protocol: "openai" };
  const protocol: ClientProtocol = m[2] === "messages" ? "anthropic" : "openai";
  const trajectoryId = decodePercent(m[1]!);
  return trajectoryId === undefined
    ? { kind: "malformed", protocol }
    : { kind: "call", trajectoryId, protocol };
}

/** The API key a request presents: a Bearer authorization, else an x-api-key header. */
export function tokenOf(headers: IncomingHttpHeaders): string | undefined {
  const auth = headers["authorization"];
  if (typeof auth === "string" && /^bearer /i.test(auth)) return auth.slice(7).trim();
  const key = headers["x-api-key"];
  return typeof key === "string" ? key.trim() : undefined;
}

/**
 * Why a request to a trajectory's endpoint is not served, checked in this order: no such route,
 * an unknown trajectory, a method other than POST, a wrong or missing API key.
 */
export function requestRefusal(r: {
  readonly method: string | undefined;
  readonly url: string;
  readonly route: RequestRoute;
  /** The token of the trajectory the route names, when it is registered. */
  readonly expectedToken: string | undefined;
  readonly presentedToken: string | undefined;
  /** Trajectories registered (named in the unknown-trajectory answer). */
  readonly registered: number;
}): Refusal | undefined {
  const pathname = r.url.split("?")[0]!;
  if (r.route.kind === "malformed")
    return {
      status: 400,
      message: `flakegym gateway: ${pathname} is not valid percent-encoding; send the trajectory id as registered`,
      type: "invalid_request_error",
    };
  if (r.route.kind !== "call")
    return {
      status: 404,
      message: `flakegym gateway: no route for ${r.method} ${pathname}; routes are POST /t/<trajectoryId>/v1/chat/completions and POST /t/<trajectoryId>/v1/messages`,
      type: "not_found_error",
    };
  const id = r.route.trajectoryId;
  if (r.expectedToken === undefined)
    return {
      status: 404,
      message: `flakegym gateway: unknown trajectory '${id}' (${r.registered} registered); it was never registered or has been unregistered`,
      type: "not_found_error",
    };
  if (r.method !== "POST")
    return {
      status: 405,
      message: `flakegym gateway: ${pathname} takes POST, got ${r.method}`,
      type: "invalid_request_error",
    };
  if (r.presentedToken !== r.expectedToken)
    return {
      status: 401,
      message: `flakegym gateway: wrong or missing API key for trajectory '${id}'`,
      type: "authentication_error",
    };
  return undefined;
}
