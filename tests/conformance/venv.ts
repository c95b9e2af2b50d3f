import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

/**
 * The one installer of pinned Python packages into a virtualenv of their own, outside the
 * repository, for the suites that judge flakegym's output with other projects' code
 * (`npm run conformance`, the e2e-real Harbor check): a requirements file, one pip install per line,
 * re-run only when the file changed. Every step is bounded.
 */

/** A Python >= 3.12: `override` (an env var's choice), then PATH, then pyenv's installed versions. */
export function findPython(override: string | undefined): string | undefined {
  const pyenv = join(process.env["PYENV_ROOT"] ?? join(homedir(), ".pyenv"), "versions");
  const installed = existsSync(pyenv)
    ? readdirSync(pyenv)
        .filter((v) => /^3\.(1[2-9]|[2-9]\d)\./.test(v))
        .sort()
        .reverse()
        .map((v) => join(pyenv, v, "bin", "python3"))
    : [];
  for (const c of [override, "python3.13", "python3.12", "python3", ...installed]) {
    if (!c) continue;
    const r = spawnSync(c, ["-c", "import sys; print(sys.version_info >= (3, 12))"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    if (r.status === 0 && r.stdout.trim() === "True") return c;
  }
  return undefined;
}

export interface VenvRequest {
  /** The virtualenv's directory (made when absent). */
  readonly venv: string;
  /** The requirements file: `<pip arguments>` per line, `#` comments. */
  readonly requirements: string;
  /** The env var a user sets to choose the base Python (named in the reason when none is found). */
  readonly pythonEnv: string;
  /** Bound on each pip install step, ms (default 30 min). */
  readonly stepTimeoutMs?: number;
  /** Progress lines (`<what>: pip install …`). */
  readonly log?: (line: string) => void;
}

/** The virtualenv with the pinned packages; which install steps failed, and why. */
export function ensureVenv(r: VenvRequest): {
  python?: string;
  failed: Record<string, string>;
  reason?: string;
} {
  const python = join(r.venv, "bin", "python");
  if (!existsSync(python)) {
    const base = findPython(process.env[r.pythonEnv]);
    if (!base) return { failed: {}, reason: `no Python >= 3.12 (set ${r.pythonEnv})` };
    execFileSync(base, ["-m", "venv", r.venv], { stdio: "inherit", timeout: 300_000 });
  }
  const reqs = readFileSync(r.requirements, "utf8");
  const stamp = join(r.venv, ".flakegym-requirements");
  const hash = createHash("sha256").update(reqs).digest("hex");
  const failedFile = join(r.venv, ".flakegym-failed.json");
  if (existsSync(stamp) && readFileSync(stamp, "utf8") === hash && existsSync(failedFile))
    return { python, failed: JSON.parse(readFileSync(failedFile, "utf8")) as Record<string, string> };
  const failed: Record<string, string> = {};
  for (const line of reqs.split("\n").map((l) => l.trim())) {
    if (!line || line.startsWith("#")) continue;
    r.log?.(`pip install ${line}`);
    const p = spawnSync(python, ["-m", "pip", "install", "-q", ...line.split(/\s+/)], {
      encoding: "utf8",
      timeout: r.stepTimeoutMs ?? 1_800_000,
    });
    if (p.status !== 0)
      failed[line] = p.error
        ? `pip did not finish: ${p.error.message}`
        : (p.stderr || p.stdout).trim().split("\n").slice(-3).join(" | ");
  }
  writeFileSync(failedFile, JSON.stringify(failed));
  writeFileSync(stamp, hash);
  return { python, failed };
}
