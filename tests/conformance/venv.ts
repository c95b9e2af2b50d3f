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

/** The Python versions a virtualenv's packages support: `[major, minor]` bounds, `below` exclusive. */
export interface PythonRange {
  readonly atLeast: readonly [number, number];
  readonly below?: readonly [number, number];
}

const DEFAULT_RANGE: PythonRange = { atLeast: [3, 12] };

/** Whether `major.minor` is in the range. Pure. */
export function inRange(v: readonly [number, number], r: PythonRange): boolean {
  const cmp = (a: readonly [number, number], b: readonly [number, number]) => a[0] - b[0] || a[1] - b[1];
  return cmp(v, r.atLeast) >= 0 && (r.below === undefined || cmp(v, r.below) < 0);
}

/** pyenv's root, discovered at run time: `$PYENV_ROOT`, else `pyenv root`, else `~/.pyenv`. */
function pyenvRoot(): string {
  const env = process.env["PYENV_ROOT"];
  if (env) return env;
  const r = spawnSync("pyenv", ["root"], { encoding: "utf8", timeout: 30_000 });
  return r.status === 0 && r.stdout.trim() ? r.stdout.trim() : join(homedir(), ".pyenv");
}

/**
 * A Python in `range` (default >= 3.12): `override` (an env var's choice), then PATH's versioned
 * names from the newest in range, `python3`, then pyenv's installed versions (newest first).
 */
export function findPython(
  override: string | undefined,
  range: PythonRange = DEFAULT_RANGE,
): string | undefined {
  const versions = join(pyenvRoot(), "versions");
  const installed = existsSync(versions)
    ? readdirSync(versions)
        .flatMap((v) => {
          const m = /^(\d+)\.(\d+)\.\d+$/.exec(v);
          return m ? [{ v, mm: [Number(m[1]), Number(m[2])] as [number, number] }] : [];
        })
        .filter((x) => inRange(x.mm, range))
        .sort((a, b) => b.mm[0] - a.mm[0] || b.mm[1] - a.mm[1])
        .map((x) => join(versions, x.v, "bin", "python3"))
    : [];
  const named = ["python3.14", "python3.13", "python3.12", "python3.11", "python3.10"];
  for (const c of [override, ...named, "python3", ...installed]) {
    if (!c) continue;
    const r = spawnSync(c, ["-c", "import sys; print('%d %d' % sys.version_info[:2])"], {
      encoding: "utf8",
      timeout: 60_000,
    });
    const [major, minor] = r.stdout?.trim().split(" ").map(Number) ?? [];
    if (r.status === 0 && major !== undefined && minor !== undefined && inRange([major, minor], range))
      return c;
  }
  return undefined;
}

/** A range as text, e.g. ">= 3.10, < 3.13". Pure. */
export const rangeText = (r: PythonRange): string =>
  `>= ${r.atLeast.join(".")}${r.below ? `, < ${r.below.join(".")}` : ""}`;

export interface VenvRequest {
  /** The virtualenv's directory (made when absent). */
  readonly venv: string;
  /** The requirements file: `<pip arguments>` per line, `#` comments. */
  readonly requirements: string;
  /** The env var a user sets to choose the base Python (named in the reason when none is found). */
  readonly pythonEnv: string;
  /** The Python versions the packages support (default >= 3.12). */
  readonly python?: PythonRange;
  /**
   * A virtualenv (built first, same Python) whose packages this one sees after its own (a .pth file
   * appends its site-packages): a framework that needs other versions of a few packages gets its own
   * virtualenv without installing torch twice.
   */
  readonly base?: string;
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
  const range = r.python ?? DEFAULT_RANGE;
  if (existsSync(python) && findPython(python, range) !== python)
    return {
      failed: {},
      reason: `the virtualenv ${r.venv} has a Python outside ${rangeText(range)}: remove it (it is rebuilt) or point the venv variable elsewhere`,
    };
  if (!existsSync(python)) {
    const base =
      r.base !== undefined ? join(r.base, "bin", "python") : findPython(process.env[r.pythonEnv], range);
    if (!base) return { failed: {}, reason: `no Python in ${rangeText(range)} (set ${r.pythonEnv})` };
    execFileSync(base, ["-m", "venv", r.venv], { stdio: "inherit", timeout: 300_000 });
    if (r.base !== undefined) {
      const site = (py: string) =>
        execFileSync(py, ["-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], {
          encoding: "utf8",
          timeout: 60_000,
        }).trim();
      writeFileSync(join(site(python), "flakegym-base.pth"), `${site(join(r.base, "bin", "python"))}\n`);
    }
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
