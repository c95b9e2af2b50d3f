import { existsSync } from "node:fs";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";

/**
 * Python venvs for the SWE-bench parity suite, kept in the user's cache
 * (`$XDG_CACHE_HOME/flakegym/swebench-parity`, else `~/.cache/...`) and reused while their
 * requirements are the same. Made with the `python3` on PATH and pip from the package index pip
 * is configured for.
 */

export const PARITY_CACHE = join(
  process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"),
  "flakegym",
  "swebench-parity",
);

/** A venv's python, or why it could not be made (pip's last lines). */
export type Venv = { readonly python: string } | { readonly skip: string };

/** The venv `name` with exactly `requirements` installed (made or remade as needed). */
export async function ensureVenv(
  name: string,
  requirements: readonly string[],
  signal: AbortSignal,
): Promise<Venv> {
  const dir = join(PARITY_CACHE, name);
  const python = join(dir, "bin", "python");
  const stamp = join(dir, "flakegym-requirements.json");
  const want = JSON.stringify(requirements);
  if (existsSync(python) && existsSync(stamp) && (await readFile(stamp, "utf8")) === want) return { python };
  await rm(dir, { recursive: true, force: true });
  await mkdir(PARITY_CACHE, { recursive: true });
  const run = (file: string, args: string[]) =>
    execa(file, args, { cancelSignal: signal, reject: false, all: true });
  const made = await run("python3", ["-m", "venv", dir]);
  if (made.exitCode !== 0) return { skip: `python3 -m venv ${name} failed: ${tail(made.all)}` };
  const pip = await run(python, [
    "-m",
    "pip",
    "install",
    "--disable-pip-version-check",
    "-q",
    ...requirements,
  ]);
  if (pip.exitCode !== 0)
    return {
      skip: `pip could not install ${requirements.join(" ")} (exit ${pip.exitCode}): ${tail(pip.all)}`,
    };
  await writeFile(stamp, want);
  return { python };
}

const tail = (s: string | undefined) => (s ?? "").trim().split("\n").slice(-3).join(" | ");
