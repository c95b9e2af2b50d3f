import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * The workspace of a Harbor task whose Dockerfile sets no WORKDIR. Harbor then starts the agent,
 * the oracle and the verifier at `/`, and such tasks (terminal-bench's convention) work in `/app`:
 * `solve.sh` writes `/app/report.json`, the tests read it. flakegym's workspace needs a directory of
 * its own, so when `solve.sh` or the tests name `/app` that is the workspace (noted in the
 * manifest); otherwise the task stays refused for its missing WORKDIR.
 */

/** The directory Harbor's tasks work in by convention. */
export const CONVENTIONAL_WORKDIR = "/app";

/** `/app` as a path (not `/apps`, not `x/app`) anywhere in the texts → `/app`; else undefined. Pure. */
export function impliedWorkdir(texts: readonly string[]): string | undefined {
  const named = /(^|[\s"'=(:;|&<>,[{])\/app(?=[/\s"';|&)<>,\]}]|$)/m;
  return texts.some((t) => named.test(t)) ? CONVENTIONAL_WORKDIR : undefined;
}

/** The texts of solution/solve.sh and the files directly under tests/ (unreadable ones skipped). */
export async function scriptTextsOf(dir: string): Promise<string[]> {
  const tests = (await readdir(join(dir, "tests"), { withFileTypes: true }).catch(() => []))
    .filter((e) => e.isFile())
    .map((e) => join("tests", e.name));
  const texts: string[] = [];
  for (const rel of ["solution/solve.sh", ...tests]) {
    const t = await readFile(join(dir, rel), "utf8").catch(() => undefined);
    if (t !== undefined && t.length < 2_000_000) texts.push(t);
  }
  return texts;
}

/** The manifest's note for a workspace taken from the convention. Pure. */
export const impliedWorkdirNote = (workdir: string) =>
  `; no WORKDIR: the workspace is ${workdir}, the directory solve.sh and the tests name (Harbor would start them at /)`;

/**
 * A built task's WORKDIR inside the sandbox's own /workspace (`WORKDIR /workspace/trace-weave`, as
 * a family of public tasks has it): the workspace is then /workspace itself, holding the WORKDIR as
 * a subdirectory, and the WORKDIR is where the oracle and the verifier start (`startDir`). Pure.
 */
export function nestedWorkdirOf(
  workdir: string,
  sandboxWorkspace: string,
): { readonly root: string; readonly startDir: string } | undefined {
  return workdir.startsWith(`${sandboxWorkspace}/`)
    ? { root: sandboxWorkspace, startDir: workdir }
    : undefined;
}

/** The note of a nested WORKDIR. Pure. */
export const nestedWorkdirNote = (startDir: string, root: string) =>
  `WORKDIR ${startDir} lies in the sandbox's own ${root}: the workspace is ${root} (holding ${startDir.slice(root.length + 1)}/ as the image has it); solve.sh and the verifier start in ${startDir}, the agent's commands in ${root}`;
