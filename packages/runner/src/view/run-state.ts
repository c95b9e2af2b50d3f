import { judgeHolder } from "../rollout/run-lock.js";
import { RunLockRecord } from "../rollout/run-lock-decision.js";
import type { SafeRoot } from "./safe-read.js";

/**
 * What a run is, from what it wrote: `complete` (every trajectory and group written), `stopped`
 * (interrupted: finish it with --resume), `failed` (it ended, or its runner died, short of complete),
 * `running` (a live runner holds its lock).
 */
export type RunState = "complete" | "stopped" | "failed" | "running";

/** The run dir's lock: held by a live runner (or one that cannot be judged), left by a dead one, none. */
export type LockState = "live" | "dead" | "absent";

/** The run's state from its summary (null: none written) and its lock. Pure. */
export function runStateOf(
  summary: { readonly complete: boolean; readonly interrupted: boolean } | null,
  lock: LockState,
): RunState {
  if (lock === "live") return "running"; // a --resume in progress runs over an older summary
  if (!summary) return "failed"; // ended without a summary: its runner died
  if (summary.complete) return "complete";
  return summary.interrupted ? "stopped" : "failed";
}

const LOCK_CAP = 64 * 1024;

/** Reads `<run>/run.lock` through the viewer's safe root and judges its holder as the runner does. */
export async function lockStateOf(root: SafeRoot, runSegs: readonly string[]): Promise<LockState> {
  if (!(await root.stat([...runSegs, "run.lock"]))) return "absent";
  let holder: RunLockRecord | undefined;
  try {
    const parsed = RunLockRecord.safeParse(
      JSON.parse(await root.readText([...runSegs, "run.lock"], LOCK_CAP)),
    );
    holder = parsed.success ? parsed.data : undefined;
  } catch {
    holder = undefined; // torn or unreadable: cannot be judged, so held
  }
  return (await judgeHolder(holder)).kind === "held" ? "live" : "dead";
}
