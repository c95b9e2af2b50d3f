import { isDiskFull, WriteError } from "../run-format/write-error.js";

/** A bare errno message (`ENOSPC: no space left on device, write`) says no file. */
const FULL_TEXT = /ENOSPC|EDQUOT|no space left on device|disk quota exceeded/i;

/**
 * A snapshot build that fails because its cache's disk is full, as an error naming the cache
 * directory, the task and what to do (the build's own error says only `ENOSPC … write`); any
 * other error is returned as it is. Pure.
 */
export function snapshotErrorOf(err: unknown, cacheDir: string, taskId: string): unknown {
  if (err instanceof WriteError) return err;
  const message = (err as Error)?.message ?? String(err);
  if (!isDiskFull(err) && !FULL_TEXT.test(message)) return err;
  return new WriteError(
    "E_DISK_FULL",
    `no space left on the device of the snapshot cache ${cacheDir} while building the snapshot of task ${taskId}: ${message}`,
    {
      cause: err,
      hint: `free space on the filesystem of ${cacheDir} (or point $FLAKEGYM_CACHE at a larger disk), then finish the run with --resume`,
    },
  );
}
