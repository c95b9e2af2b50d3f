import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { createDeadline } from "@flakegym/nomad-jobs";
import { UsageError } from "../errors.js";
import { parsePolicySpec } from "./spec.js";

/**
 * Each model server a run's policies name is probed once, before the first trajectory: any HTTP
 * answer (even 401 or 404) means it is reachable; a refused connection, an unknown host or no
 * answer within the bound is a usage error naming the URL, at once — not found trajectory by
 * trajectory after every worker has started. Nothing is sent but a GET of the base URL.
 */

export const PROBE_TIMEOUT_MS = 10_000;

/** The distinct base URLs of the model policies among `specs`. Pure. */
export function modelEndpointsOf(specs: readonly string[]): string[] {
  const urls = specs.flatMap((s) => {
    const p = parsePolicySpec(s);
    return p.kind === "openai" || p.kind === "anthropic" ? [p.baseUrl] : [];
  });
  return [...new Set(urls)];
}

/** Why `url` cannot be reached (undefined: it answered). Never throws. */
export function probeEndpoint(url: string, signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch (err) {
      resolve((err as Error).message);
      return;
    }
    const req = (u.protocol === "https:" ? httpsRequest : httpRequest)(
      u,
      { method: "GET", signal },
      (res) => {
        res.resume();
        resolve(undefined);
        req.destroy();
      },
    );
    req.on("error", (err: NodeJS.ErrnoException) =>
      resolve(signal.aborted ? "no answer in time" : (err.code ?? err.message)),
    );
    req.end();
  });
}

/** Probes every model endpoint once (in parallel, bounded); the first unreachable one is a usage error. */
export async function probePolicyEndpoints(
  specs: readonly string[],
  signal: AbortSignal,
  timeoutMs = PROBE_TIMEOUT_MS,
): Promise<void> {
  const urls = modelEndpointsOf(specs);
  if (urls.length === 0) return;
  using deadline = createDeadline({
    signals: [signal],
    timeout: { limit: "the policy endpoint probe", ms: timeoutMs },
  });
  const problems = await Promise.all(urls.map((u) => probeEndpoint(u, deadline.signal)));
  if (signal.aborted) throw signal.reason;
  const i = problems.findIndex((p) => p !== undefined);
  if (i < 0) return;
  throw new UsageError(
    `--policy: the model server ${urls[i]} cannot be reached (${problems[i]}); no trajectory was started`,
    "start the server (or fix the URL in --policy), then run again",
    "E_UPSTREAM",
  );
}
