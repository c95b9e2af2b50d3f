import { dirname } from "node:path";
import { FlakegymError } from "../errors.js";

/** A write of a run's file failed: the file named, and for a full disk what to do. */
export class WriteError extends FlakegymError {
  override readonly name = "WriteError";
}

const FULL = new Set(["ENOSPC", "EDQUOT", "EFBIG"]);

/** Whether an error is a full disk (or quota). */
export const isDiskFull = (err: unknown) => FULL.has(String((err as NodeJS.ErrnoException)?.code));

/** `err` (from writing `file`) as a {@link WriteError} naming the file; a WriteError passes as it is. */
export function writeErrorOf(file: string, err: unknown): WriteError {
  if (err instanceof WriteError) return err;
  const why = (err as Error)?.message ?? String(err);
  if (isDiskFull(err)) {
    return new WriteError("E_DISK_FULL", `no space left on the device to write ${file}`, {
      cause: err,
      hint: `free space on the filesystem of ${dirname(file)}, then finish the run with --resume (nothing half-written is kept)`,
    });
  }
  return new WriteError("E_WRITE", `cannot write ${file}: ${why}`, { cause: err });
}
