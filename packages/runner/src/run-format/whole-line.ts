import type { FileHandle } from "node:fs/promises";
import { WriteError, writeErrorOf } from "./write-error.js";

/**
 * Appends `line` to an append-mode file whole or not at all: a write cut short (disk full, quota) is
 * truncated away again, so the file never ends in a torn line. The caller serializes the writes of
 * one file (a truncate must not cut another writer's line).
 */
export async function appendWholeLine(fh: FileHandle, line: Uint8Array, file: string): Promise<void> {
  const { size } = await fh.stat();
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
    if (offset > 0 || (await fh.stat()).size > size) await fh.truncate(size).catch(() => {});
    throw writeErrorOf(file, err);
  }
}
