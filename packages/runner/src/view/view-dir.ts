import { stat } from "node:fs/promises";
import { UsageError } from "../errors.js";
import { createViewStore } from "./run-data.js";
import { openSafeRoot } from "./safe-read.js";

/** What to do when `flakegym view` is pointed at a directory with nothing to show. */
export const VIEW_DIR_HINT =
  "give a run dir (runs/<id>), an eval dir (evals/<id>) or a dir holding runs/ and evals/; " +
  "no run yet? `npx flakegym rollout --task semver-lite-caret-zero` makes one under runs/";

/** What `view` found at the path it was given. */
export interface ViewDirFacts {
  readonly exists: boolean;
  readonly isDir: boolean;
  readonly runs: number;
  readonly evals: number;
}

/** Why `view <given>` has nothing to serve, or undefined when it has. Pure. */
export function viewDirProblem(given: string, f: ViewDirFacts): string | undefined {
  if (!f.exists) return `${given}: no such directory`;
  if (!f.isDir) return `${given} is a file, not a directory`;
  if (f.runs === 0 && f.evals === 0)
    return `no runs or evals under ${given}: neither a run dir (run.json) nor an eval dir (report.json), nor a dir holding them (as children, runs/* or evals/*)`;
  return undefined;
}

/** Refuses, as a usage error saying what to do next, a `view` directory with nothing to show. */
export async function checkViewDir(dir: string, given: string): Promise<void> {
  const st = await stat(dir).catch(() => undefined);
  let facts: ViewDirFacts = {
    exists: st !== undefined,
    isDir: st?.isDirectory() ?? false,
    runs: 0,
    evals: 0,
  };
  if (facts.isDir) {
    const index = await createViewStore(await openSafeRoot(dir)).index();
    facts = { ...facts, runs: index.runs.length, evals: index.evals.length };
  }
  const problem = viewDirProblem(given, facts);
  if (problem) throw new UsageError(problem, VIEW_DIR_HINT);
}
