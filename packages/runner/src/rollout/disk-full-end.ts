import { isDiskFull, WriteError } from "../run-format/write-error.js";
import type { AttemptEnd } from "./retry.js";

const FULL_TEXT = /ENOSPC|EDQUOT|no space left on device|E_DISK_FULL|disk quota exceeded/i;

/**
 * Whether an agent attempt ended because a disk is full (an error, or an infra_error outcome saying
 * so). Such a trajectory is neither retried (the disk is still full) nor recorded (it would count as
 * finished): its task stops, summary.json says why, and `--resume` runs it once space is back. Pure.
 */
export function isDiskFullEnd(end: AttemptEnd): boolean {
  if ("error" in end) {
    const e = end.error as { code?: unknown; message?: unknown };
    return isDiskFull(e) || e?.code === "E_DISK_FULL" || FULL_TEXT.test(String(e?.message ?? ""));
  }
  return end.outcome.kind === "infra_error" && FULL_TEXT.test(end.outcome.detail);
}

/** The error that stops a trajectory whose attempt ended on a full disk, naming its directory. */
export function diskFullStop(dir: string, end: AttemptEnd): WriteError {
  const detail = "error" in end ? ((end.error as Error)?.message ?? String(end.error)) : end.outcome.detail;
  return new WriteError("E_DISK_FULL", `no space left on the device while writing under ${dir}: ${detail}`, {
    ...("error" in end ? { cause: end.error } : {}),
    hint: `free space on the filesystem of ${dir}, then finish the run with --resume (the trajectory runs again)`,
  });
}
