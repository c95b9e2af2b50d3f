import { PYTHON_INTERPRETER_ENV } from "../tasks/swebench-env-specs.js";
import type { Bind } from "../workers/local/bwrap-args.js";
import type { EnvInstallRecord } from "./env-install.js";
import type { PythonChoice } from "./python-choice.js";

/**
 * What a chosen interpreter adds to a sandbox: its prefix bound read-only at its own path (pyenv's,
 * uv's and Nix's builds find their libraries there by absolute RUNPATH), and, in the build, the
 * variable the venv command reads. Pure.
 */

/**
 * The build sandbox's binds and environment for `choice` (nothing without a matching interpreter).
 * With `caBundle` (the system's CA file, bound with /etc/ssl), pip and Python's ssl verify against
 * it: a pyenv or uv CPython's pip otherwise trusts only its bundled certifi, where Debian's patched
 * pip trusts the system store (a proxy's CA included). Pure.
 */
export function pythonShapeOf(
  choice: PythonChoice | undefined,
  caBundle?: string,
): {
  binds?: Bind[];
  env?: Record<string, string>;
} {
  if (choice?.kind !== "match") return {};
  const { bind, interpreter } = choice.candidate;
  return {
    ...(bind ? { binds: [{ src: bind, dest: bind }] } : {}),
    env: {
      [PYTHON_INTERPRETER_ENV]: interpreter,
      ...(caBundle ? { PIP_CERT: caBundle, SSL_CERT_FILE: caBundle, REQUESTS_CA_BUNDLE: caBundle } : {}),
    },
  };
}

/** Where distributions keep the system's CA bundle under /etc/ssl (the sandboxes bind /etc/ssl): Debian/Ubuntu, Alpine/Arch. */
export const SYSTEM_CA_BUNDLES = ["/etc/ssl/certs/ca-certificates.crt", "/etc/ssl/cert.pem"] as const;

/**
 * The host directories every later sandbox of a snapshot binds read-only at the same path: the
 * prefix of the interpreter its venv links to (the manifest's envInstall.python.bind). Pure.
 */
export function interpreterBindsOf(envInstall: Pick<EnvInstallRecord, "python"> | undefined): string[] {
  const bind = envInstall?.python?.bind;
  return bind ? [bind] : [];
}
