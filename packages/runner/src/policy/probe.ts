import { connect } from "node:net";
import { createDeadline } from "@flakegym/nomad-jobs";
import { UsageError } from "../errors.js";
import { parsePolicySpec } from "./spec.js";

/**
 * Each model server a run's policies name is probed once, before the first trajectory: a TCP
 * connection to its host and port that is accepted means it is reachable, whatever the server
 * then does (an HTTP error, a reset, a slow or no answer are the trajectory's to classify); a
 * refused connection, an unknown host, no route, or no connection within the bound is a usage
 * error naming the URL, at once — not found trajectory by trajectory after every worker has
 * started. Nothing is sent: the connection is closed as soon as it is open.
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

/** Socket errors that mean a server took the connection (and then dropped it): reachable. */
const ANSWERED_CODES = new Set(["ECONNRESET", "ECONNABORTED", "EPIPE"]);

/** Why `url` cannot be reached (undefined: its host accepted a connection). Never throws. */
export function probeEndpoint(url: string, signal: AbortSignal): Promise<string | undefined> {
  return new Promise((resolve) => {
    let u: URL;
    try {
      u = new URL(url);
    } catch (err) {
      resolve((err as Error).message);
      return;
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") {
      resolve(`not an http(s) URL (${u.protocol})`);
      return;
    }
    if (signal.aborted) {
      resolve("no answer in time");
      return;
    }
    const port = Number(u.port || (u.protocol === "https:" ? 443 : 80));
    const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
    const socket = connect({ host, port });
    const onAbort = () => socket.destroy();
    const done = (why: string | undefined) => {
      signal.removeEventListener("abort", onAbort);
      socket.destroy();
      resolve(why);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    socket.once("connect", () => done(undefined));
    socket.once("error", (err: NodeJS.ErrnoException) =>
      done(err.code && ANSWERED_CODES.has(err.code) ? undefined : (err.code ?? err.message)),
    );
    socket.once("close", () => done(signal.aborted ? "no answer in time" : "connection closed"));
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
