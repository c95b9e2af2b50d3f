import { assertRoutableUrl, isLoopbackHost } from "@flakegym/nomad-jobs";
import type { WorkerSpec } from "../types.js";
import { NomadWorkerError } from "./errors.js";

/**
 * The policy gateway as seen from a Nomad allocation. The runner's gateway URL usually names
 * 127.0.0.1, which inside an allocation is the allocation itself; `--gateway-advertise <host:port>`
 * names an address of this machine that the Nomad clients can route to.
 */

const HINT =
  "pass --gateway-advertise <host:port> with an address of this machine that the Nomad clients can reach " +
  "(and make the gateway listen on it), e.g. --gateway-advertise 10.0.0.5:8089";

/** Validates a `--gateway-advertise` value: `host:port` or `[v6]:port`, not loopback. */
export function parseGatewayAdvertise(value: string): string {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:/\s[\]]+):(\d{1,5})$/.exec(value.trim());
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65_535) {
    throw new NomadWorkerError("E_NOMAD_GATEWAY", `--gateway-advertise '${value}' is not host:port`, {
      hint: "give the address and port the Nomad clients use to reach the gateway, e.g. 10.0.0.5:8089",
    });
  }
  if (isLoopbackHost(m[1]!)) {
    throw new NomadWorkerError(
      "E_NOMAD_GATEWAY",
      `--gateway-advertise '${value}' is a loopback address: a Nomad allocation cannot reach this machine there`,
      { hint: HINT },
    );
  }
  return `${m[1]}:${m[2]}`;
}

/** The base URL the core inside an allocation uses for the policy. */
export function resolvePolicyBaseUrl(gateway: WorkerSpec["gateway"], advertise?: string): string {
  if (!gateway.url) {
    throw new NomadWorkerError(
      "E_NOMAD_GATEWAY",
      "the nomad backend needs the policy gateway over TCP (spec.gateway.url), but only a unix socket was given",
      { hint: HINT },
    );
  }
  let u: URL;
  try {
    u = new URL(gateway.url);
  } catch (cause) {
    throw new NomadWorkerError("E_NOMAD_GATEWAY", `policy gateway URL '${gateway.url}' is not a URL`, {
      cause,
    });
  }
  if (advertise) u.host = parseGatewayAdvertise(advertise);
  try {
    return assertRoutableUrl(u.toString(), "policy gateway URL").toString().replace(/\/$/, "");
  } catch (cause) {
    throw new NomadWorkerError(
      "E_NOMAD_GATEWAY",
      `the policy gateway URL '${u.toString()}' is a loopback address, which a Nomad allocation cannot reach`,
      { hint: HINT, cause },
    );
  }
}
