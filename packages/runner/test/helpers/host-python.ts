import { spawnSync } from "node:child_process";

let cached: { reason: string | undefined } | undefined;

/**
 * Why the host's assertion rewriter (scoring/externalize/rewrite.ts) cannot run here (undefined
 * when it can): it runs `$FLAKEGYM_HOST_PYTHON`, else `python3` on PATH, which must be a Python
 * 3.8+. The Nix build sandbox of `checks.<system>.runner-unit-tests` has none.
 */
export function hostPythonSkipReason(): string | undefined {
  cached ??= { reason: probe() };
  return cached.reason;
}

function probe(): string | undefined {
  const python = process.env.FLAKEGYM_HOST_PYTHON || "python3";
  const r = spawnSync(python, ["-I", "-c", "import sys; sys.exit(0 if sys.version_info >= (3, 8) else 3)"], {
    stdio: "ignore",
    timeout: 15_000,
  });
  if (r.error || r.status === null)
    return `the host rewriter's Python (${python}) is not on PATH, as in the Nix build sandbox; install python3 (3.8+) or set FLAKEGYM_HOST_PYTHON`;
  if (r.status !== 0)
    return `the host rewriter's Python (${python}) is not a Python 3.8+; set FLAKEGYM_HOST_PYTHON`;
  return undefined;
}

/** `skipIf` for tests that run the host rewriter; prints the reason once per file. */
export function skipWithoutHostPython(what: string): boolean {
  const reason = hostPythonSkipReason();
  if (reason) console.log(`skipped ${what}: ${reason}`);
  return reason !== undefined;
}
