/**
 * Checks on what goes into a job spec. A job spec is readable by anyone with `read-job` on its
 * namespace and runs on another machine, so it must carry no secrets and only addresses the
 * allocation can route to.
 */

/** True for names and literals that resolve to the machine (or container) itself. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (h === "0.0.0.0" || h === "::" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  if (/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)) return true;
  const mapped = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(h);
  if (mapped) return isLoopbackHost(mapped[1]!);
  return false;
}

/** Throws unless `url` is an http(s) URL whose host an allocation on another machine can reach. */
export function assertRoutableUrl(url: string, what: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new TypeError(`${what} '${url}' is not a URL (expected http://<host>:<port>/...)`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") {
    throw new TypeError(`${what} '${url}' must be http or https, not ${u.protocol.replace(":", "")}`);
  }
  if (isLoopbackHost(u.hostname)) {
    throw new TypeError(
      `${what} '${url}' is a loopback address: inside a Nomad allocation it names the allocation itself, ` +
        "not this machine. Advertise an address of this machine that the Nomad clients can route to " +
        "(flakegym: --gateway-advertise <host:port>).",
    );
  }
  return u;
}

const SECRET_NAME = /(^|_)(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?)$/i;

/**
 * Throws if an environment variable looks like a secret (by name) and has a value. Workers reach
 * the policy only through the gateway, which holds the upstream keys.
 */
export function assertNoSecrets(env: Readonly<Record<string, string>>, what: string): void {
  for (const [k, v] of Object.entries(env)) {
    if (v !== "" && (k === "NOMAD_TOKEN" || SECRET_NAME.test(k))) {
      throw new TypeError(
        `${what}: '${k}' looks like a secret; a Nomad job spec is readable by anyone with read-job on ` +
          "the namespace, so secrets never go into worker env (the policy gateway holds upstream keys)",
      );
    }
  }
}

/** A Nomad-safe id fragment: letters, digits, `_ . -`; at most `max` characters. */
export function idPart(value: string, max = 40): string {
  const s = value
    .replace(/[^A-Za-z0-9_.-]+/g, "-")
    .replace(/-+/g, "-")
    .replace(/^-|-$/g, "");
  return (s || "x").slice(0, max).replace(/-$/, "");
}
