import type { FileHandle } from "node:fs/promises";
import { WriteError, writeErrorOf } from "./write-error.js";

/**
 * Appends `line` to an append-mode file whole or not at all: a write cut short (disk full, quota) is
 * truncated away again, so the file never ends in a torn line. The caller serializes the writes of
 * one file (a truncate must not cut another writer's line): what this call wrote is then the file's
 * last `offset` bytes, and a line written in full costs no `stat` (the turn log writes one a call).
 * A failed write(2) writes nothing; a short one says how much it wrote.
 */
export async function appendWholeLine(fh: FileHandle, line: Uint8Array, file: string): Promise<void> {
  let offset = 0;
  try {
    while (offset < line.length) {
      const { bytesWritten } = await fh.write(line, offset, line.length - offset);
      if (bytesWritten <= 0)
        throw new WriteError(
          "E_DISK_FULL",
          `no space left on the device to write ${file}: the write made no progress`,
        );
      offset += bytesWritten;
    }
  } catch (err) {
    if (offset > 0) {
      const cut = offset;
      await fh
        .stat()
        .then(({ size }) => fh.truncate(Math.max(0, size - cut)))
        .catch(() => {});
    }
    throw writeErrorOf(file, err);
  }
}
