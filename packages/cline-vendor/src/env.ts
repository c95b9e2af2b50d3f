import { ClineVendorError, ErrorCode } from "./errors.js";

/**
 * Variables copied from the runner's environment into the core's. Everything else is dropped:
 * the core logs its whole environment to core.log, and the agent's commands inherit it.
 */
export const CORE_ENV_ALLOW_LIST = [
  "PATH",
  "LANG",
  "LANGUAGE",
  "LC_ALL",
  "LC_CTYPE",
  "TZ",
  "TERM",
  "TMPDIR",
  "USER",
  "LOGNAME",
  "SHELL",
] as const;

/** Names that look like credentials; refused even when passed explicitly. */
const SECRET_NAME = /(API_?KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIALS?|_AUTH|^AUTH)/i;

/** True when an environment variable name looks like it carries a credential. */
export function looksSecret(name: string): boolean {
  return SECRET_NAME.test(name);
}

/**
 * The core's environment: the allow-listed variables of `base`, then HOME, then `extra`.
 * Throws E_CLINE_ARGUMENT when `extra` names something that looks like a credential: the core
 * never needs one (the policy gateway holds the real keys; the core gets a per-trajectory token
 * through its API configuration, not its environment).
 */
export function buildCoreEnv(
  base: NodeJS.ProcessEnv,
  home: string,
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of CORE_ENV_ALLOW_LIST) {
    const v = base[name];
    if (v !== undefined) env[name] = v;
  }
  env["PATH"] ??= "/usr/local/bin:/usr/bin:/bin";
  env["HOME"] = home;
  for (const [name, value] of Object.entries(extra)) {
    if (looksSecret(name))
      throw new ClineVendorError(
        ErrorCode.InvalidArgument,
        `refusing to pass '${name}' into the Cline core's environment (it looks like a credential)`,
        {
          hint: "the core logs its whole environment and the agent's commands inherit it; give the policy gateway the real key and the core a per-trajectory token via the provider config",
        },
      );
    env[name] = value;
  }
  return env;
}
