import { readdir, realpath, stat } from "node:fs/promises";
import { homedir } from "node:os";
import { delimiter, join } from "node:path";
import { execa } from "execa";
import { FlakegymError } from "../errors.js";
import { nixStorePathOf } from "../nix/store-path.js";
import { NIX_STORE_DIR } from "../workers/local/toolchain.js";
import {
  choosePython,
  fullVersionOf,
  minorOf,
  type PythonCandidate,
  type PythonChoice,
  type PythonProvider,
  parseUserPythons,
} from "./python-choice.js";

/**
 * Finds this machine's CPython interpreters, provider by provider (python-choice.ts orders and
 * chooses): the ones the user named, a Nix profile's, uv's managed ones, pyenv's, `pythonX.Y` on
 * PATH. Each is asked its own version; its prefix is what the sandboxes bind read-only at the
 * same path (pyenv's and uv's builds have an absolute RUNPATH into it).
 */

/** Environment variable naming interpreters: `3.9=/path/to/python3.9[,3.10=/path…]` (like `--python`). */
export const PYTHON_ENV = "FLAKEGYM_PYTHON";
/** Environment variable allowing a task to run on another Python than it wants (`1`), like `--allow-python-mismatch`. */
export const ALLOW_PYTHON_MISMATCH_ENV = "FLAKEGYM_ALLOW_PYTHON_MISMATCH";

/** What the user said about interpreters (flags, else environment). */
export interface PythonOptions {
  /** `X.Y=/path` entries (from `--python`, and FLAKEGYM_PYTHON). */
  readonly named?: readonly string[];
  readonly allowMismatch?: boolean;
}

/** The options from the environment, merged under the explicit ones. */
export function pythonOptionsOf(o: PythonOptions = {}, env: NodeJS.ProcessEnv = process.env): PythonOptions {
  const fromEnv = env[PYTHON_ENV] ? [env[PYTHON_ENV]] : [];
  return {
    named: [...(o.named ?? []), ...fromEnv],
    allowMismatch: o.allowMismatch ?? env[ALLOW_PYTHON_MISMATCH_ENV] === "1",
  };
}

const exists = async (p: string) => (await stat(p).catch(() => undefined)) !== undefined;
const subdirs = async (d: string) => (await readdir(d).catch(() => [] as string[])).sort();

/** PATH's absolute directories, without version managers' shims (scripts that pick by cwd, not interpreters). */
const pathDirs = (env: NodeJS.ProcessEnv) =>
  (env.PATH ?? "").split(delimiter).filter((d) => d.startsWith("/") && !/\/shims\/?$/.test(d));

/** Asks an interpreter its version and base prefix; undefined when it does not run. */
async function probe(provider: PythonProvider, path: string): Promise<PythonCandidate | undefined> {
  const r = await execa(
    path,
    ["-I", "-S", "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3]); print(sys.base_prefix)"],
    { reject: false, timeout: 15_000, stdin: "ignore", env: { PATH: "/usr/bin:/bin" }, extendEnv: false },
  ).catch(() => undefined);
  if (r?.exitCode !== 0) return undefined;
  const [v, prefix] = r.stdout.trim().split("\n");
  const version = fullVersionOf(v ?? "");
  if (!version || !prefix) return undefined;
  const interpreter = await realpath(path).catch(() => path);
  const real = await realpath(prefix).catch(() => prefix);
  const bind = nixStorePathOf(interpreter)
    ? NIX_STORE_DIR
    : real === "/usr" || real.startsWith("/usr/")
      ? undefined
      : real;
  return { provider, interpreter, version, ...(bind ? { bind } : {}) };
}

/** The pyenv root: `$PYENV_ROOT`, else `pyenv root`, else `~/.pyenv`. */
async function pyenvRoot(env: NodeJS.ProcessEnv): Promise<string> {
  if (env.PYENV_ROOT) return env.PYENV_ROOT;
  const r = await execa("pyenv", ["root"], { reject: false, timeout: 10_000, stdin: "ignore" }).catch(
    () => undefined,
  );
  return r?.exitCode === 0 && r.stdout.trim() ? r.stdout.trim() : join(env.HOME ?? homedir(), ".pyenv");
}

/** uv's managed interpreters: `$UV_PYTHON_INSTALL_DIR`, else `$XDG_DATA_HOME/uv/python`, else `~/.local/share/uv/python`. */
function uvDir(env: NodeJS.ProcessEnv): string {
  if (env.UV_PYTHON_INSTALL_DIR) return env.UV_PYTHON_INSTALL_DIR;
  const data = env.XDG_DATA_HOME ?? join(env.HOME ?? homedir(), ".local", "share");
  return join(data, "uv", "python");
}

/** Candidate executables of `minor`, provider by provider (not yet probed). */
async function pathsOf(minor: string, o: PythonOptions, env: NodeJS.ProcessEnv) {
  const out: { provider: PythonProvider; path: string }[] = [];
  for (const text of o.named ?? []) {
    const parsed = parseUserPythons(text);
    if (!parsed.ok)
      throw new FlakegymError("E_USAGE", `--python / ${PYTHON_ENV}: ${parsed.reason}`, {
        hint: "give VERSION=/absolute/path/to/pythonVERSION, several separated by commas",
      });
    for (const p of parsed.pythons) if (p.minor === minor) out.push({ provider: "user", path: p.path });
  }
  const home = env.HOME ?? homedir();
  const nixProfiles = (env.NIX_PROFILES ?? `/nix/var/nix/profiles/default ${home}/.nix-profile`).split(/\s+/);
  for (const profile of nixProfiles.filter(Boolean).reverse())
    out.push({ provider: "nix", path: join(profile, "bin", `python${minor}`) });
  const uv = uvDir(env);
  for (const d of await subdirs(uv))
    if (d.startsWith(`cpython-${minor}.`))
      out.push({ provider: "uv", path: join(uv, d, "bin", `python${minor}`) });
  const pyenv = join(await pyenvRoot(env), "versions");
  for (const d of await subdirs(pyenv))
    if (new RegExp(`^${minor.replace(".", "\\.")}\\.\\d+$`).test(d))
      out.push({ provider: "pyenv", path: join(pyenv, d, "bin", `python${minor}`) });
  for (const dir of pathDirs(env)) out.push({ provider: "path", path: join(dir, `python${minor}`) });
  return out;
}

/** Every interpreter of `minor` found, probed (unique by real path, first provider wins). */
export async function discoverPythons(
  minor: string,
  o: PythonOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<PythonCandidate[]> {
  const found: PythonCandidate[] = [];
  const seen = new Set<string>();
  for (const { provider, path } of await pathsOf(minor, o, env)) {
    if (!(await exists(path))) continue;
    const c = await probe(provider, path);
    if (!c || seen.has(c.interpreter) || minorOf(c.version) !== minor) continue;
    seen.add(c.interpreter);
    found.push(c);
  }
  return found;
}

/** The interpreters on PATH as `python3` (what a refusal says was found instead). */
async function fallbackPythons(env: NodeJS.ProcessEnv): Promise<PythonCandidate[]> {
  const out: PythonCandidate[] = [];
  for (const dir of ["/usr/bin", ...pathDirs(env)]) {
    const p = join(dir, "python3");
    if (!(await exists(p))) continue;
    const c = await probe("path", p);
    if (c && !out.some((x) => x.interpreter === c.interpreter)) out.push(c);
  }
  return out;
}

/**
 * The candidates a choice for `minor` is made among: those of that version, else (to name in a
 * refusal) the python3 interpreters found instead. `opts` already merged with the environment.
 */
export async function candidatesFor(
  minor: string,
  opts: PythonOptions,
  env: NodeJS.ProcessEnv = process.env,
): Promise<PythonCandidate[]> {
  const found = await discoverPythons(minor, opts, env);
  return found.length > 0 ? found : await fallbackPythons(env);
}

/** Discovers and chooses the interpreter for a task wanting `wanted` (see python-choice.ts). */
export async function resolvePython(
  taskId: string,
  wanted: string,
  o: PythonOptions = {},
  env: NodeJS.ProcessEnv = process.env,
): Promise<PythonChoice> {
  const minor = minorOf(wanted) ?? wanted;
  const opts = pythonOptionsOf(o, env);
  return choosePython(taskId, minor, await candidatesFor(minor, opts, env), opts.allowMismatch ?? false);
}
