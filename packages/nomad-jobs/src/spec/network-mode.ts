/**
 * The container network a worker joins. Nomad filters no egress by itself: with docker's default
 * `bridge` (or podman's slirp4netns/pasta) a worker reaches the internet, the node's Nomad API on
 * :4646 and cloud metadata; with `host` it shares the node's stack (its core port is the node's).
 * So a container worker must name a network the operator built to reach only the gateway
 * (docs/reference/nomad.md, Network egress). Pure.
 */

/** The network container workers join unless the backend names another. The operator creates it. */
export const DEFAULT_WORKER_NETWORK = "flakegym-egress";

/** Built-in modes whose egress is open, with what each exposes. */
const OPEN_MODES: Readonly<Record<string, string>> = {
  host: "shares the node's network stack: the node's Nomad API, cloud metadata and every local port are reachable",
  bridge:
    "docker's default bridge: NAT to anywhere (the internet, the node's Nomad API on :4646, cloud metadata)",
  default: "the runtime's default network: NAT to anywhere",
  slirp4netns: "podman's user-mode network: NAT to anywhere",
  pasta: "podman's user-mode network: NAT to anywhere",
  private: "podman's default network: NAT to anywhere",
};

/** Why a worker must not use `mode`, or undefined when it names a dedicated network. */
export function networkModeProblem(mode: string): string | undefined {
  const m = mode.trim().toLowerCase();
  if (m === "") return "network_mode is empty: the runtime's default network has open egress";
  const open = OPEN_MODES[m];
  if (open) return `network_mode '${mode}' ${open}`;
  if (m === "none") {
    return "network_mode 'none' has no interface: the runner cannot reach the core and the core cannot reach the gateway";
  }
  if (/^(container|ns|task):/.test(m)) {
    return `network_mode '${mode}' joins another container's network namespace (another worker's ports and traffic)`;
  }
  return undefined;
}

/** Throws (naming the option and what to create) unless `mode` is a dedicated network. */
export function checkNetworkMode(mode: string): void {
  const problem = networkModeProblem(mode);
  if (problem) {
    throw new TypeError(
      `${problem}. Set the driver's networkMode (--network-mode) to a network whose egress reaches only the ` +
        `policy gateway, e.g. '${DEFAULT_WORKER_NETWORK}' created by the operator (docs/reference/nomad.md, Network egress)`,
    );
  }
}
