import { mkdir, readFile, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { skipWithoutHostPython } from "./host-python.js";

/**
 * The scoring tests that run a guarded (decoyed, externalized) test file under the host's real
 * pytest share these: a seeded draw, the skip check, and one pytest run with the emission channel.
 */

/** A seeded draw for guardHidden (decoy values and names vary per seed; tests assert what holds for any). */
export function seededDraw(start: number): (n: number) => number {
  let seed = start;
  return (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return (seed >>> 16) % n;
  };
}

/**
 * Whether a guarded file's pytest runs cannot run here: no host Python 3.8+ (the rewriter's), or
 * no pytest in it. Prints `skipped <what>: <reason>` once.
 */
export async function pytestUnavailable(what: string): Promise<boolean> {
  if (skipWithoutHostPython(what)) return true;
  const hasPytest = (await execa("python3", ["-c", "import pytest"], { reject: false })).exitCode === 0;
  if (!hasPytest)
    console.log(`skipped ${what}: the host's python3 has no pytest (scripts/ensure-system-deps installs it)`);
  return !hasPytest;
}

export type PytestOutcome = "passed" | "failed";

/**
 * Writes `files` (path in `dir` → content: the guarded test files, the code under test, a conftest)
 * and runs `pytest -rA` over `dir/tests` with the emission channel at `dir/emit`: each reported
 * id's outcome, the ids pytest passed, and what the rewritten files emitted.
 */
export async function runGuardedPytest(
  dir: string,
  files: Readonly<Record<string, string | Uint8Array>>,
): Promise<{ outcomes: Map<string, PytestOutcome>; passed: Set<string>; emitted: string | undefined }> {
  await mkdir(join(dir, "tests"), { recursive: true });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  const emit = join(dir, "emit");
  const p = await execa("python3", ["-m", "pytest", "-rA", "-p", "no:cacheprovider", "tests"], {
    cwd: dir,
    env: { FLAKEGYM_EMIT: emit, PYTHONPATH: dir },
    reject: false,
    timeout: 120_000,
  });
  const outcomes = new Map<string, PytestOutcome>();
  for (const m of p.stdout.matchAll(/^(PASSED|FAILED|ERROR) (\S+)/gm))
    outcomes.set(m[2]!, m[1] === "PASSED" ? "passed" : "failed");
  // every id pytest reported PASSED (a teardown ERROR after it is a line of its own)
  const passed = new Set([...p.stdout.matchAll(/^PASSED (\S+)/gm)].map((m) => m[1]!));
  return { outcomes, passed, emitted: await readFile(emit, "utf8").catch(() => undefined) };
}

/** The guarded files as `runGuardedPytest` takes them. */
export function filesOf(files: readonly { readonly path: string; readonly content: Uint8Array }[]) {
  return Object.fromEntries(files.map((f) => [f.path, f.content]));
}
