import { constants } from "node:fs";
import { type FileHandle, lstat, open, readdir, readlink, realpath } from "node:fs/promises";
import { join, sep } from "node:path";
import { FlakegymError } from "../errors.js";
import { SEGMENT } from "./segment.js";

/**
 * Reading a served directory that an agent influenced (run and eval dirs hold the agent's diff, its
 * conversation, files named after its task): every path is a list of checked name segments under
 * the root, no symlink is followed anywhere on the way (each segment is lstat'ed, the file opened
 * with O_NOFOLLOW and the opened descriptor's real path checked to lie under the root), only
 * regular files are read, and every read is capped.
 */

export { SEGMENT } from "./segment.js";

export class ViewPathError extends FlakegymError {
  constructor(
    message: string,
    readonly status: 400 | 404 | 413,
  ) {
    super("E_VIEW_PATH", message, { hint: "the viewer serves only plain files and dirs under its root" });
  }
}

/** Splits a relative path (`runs/abc/trajectories/t0`) into checked segments. Pure. */
export function checkedSegments(rel: string): string[] {
  const parts = rel === "" ? [] : rel.split("/");
  for (const p of parts)
    if (!SEGMENT.test(p)) throw new ViewPathError(`path segment '${p.slice(0, 80)}' is not allowed`, 400);
  return parts;
}

export interface SafeRoot {
  /** The root's real path. */
  readonly dir: string;
  /** Reads a regular file under the root as text, refusing it when it is larger than `maxBytes`. */
  readText(segments: readonly string[], maxBytes: number): Promise<string>;
  /** Reads a file's bytes `[start, end)` (clamped to its size and to `maxBytes`). */
  readRange(segments: readonly string[], start: number, end: number, maxBytes: number): Promise<Buffer>;
  /** A file's bytes in chunks of `chunkBytes`, read through one descriptor (closed when the loop ends). */
  chunks(segments: readonly string[], chunkBytes: number): AsyncIterable<Buffer>;
  /** Size and mtime of a regular file, or undefined when it is absent (or not a plain file). */
  stat(segments: readonly string[]): Promise<{ size: number; mtimeMs: number } | undefined>;
  /** Names of the plain subdirectories of a dir (symlinks and odd names left out), sorted. */
  listDirs(segments: readonly string[]): Promise<string[]>;
}

export async function openSafeRoot(dir: string): Promise<SafeRoot> {
  const root = await realpath(dir);
  const within = (p: string) => p === root || p.startsWith(root.endsWith(sep) ? root : root + sep);

  /** lstat every ancestor segment: none may be a symlink. */
  async function checkAncestors(segments: readonly string[]): Promise<void> {
    let p = root;
    for (const s of segments.slice(0, -1)) {
      if (!SEGMENT.test(s)) throw new ViewPathError(`path segment '${s.slice(0, 80)}' is not allowed`, 400);
      p = join(p, s);
      const st = await lstat(p).catch(() => undefined);
      if (!st?.isDirectory()) throw new ViewPathError(`${segments.join("/")}: not found`, 404);
    }
  }

  async function openFile(segments: readonly string[]): Promise<FileHandle> {
    const last = segments.at(-1);
    if (!last || !SEGMENT.test(last)) throw new ViewPathError("a file name is required", 400);
    await checkAncestors(segments);
    let fh: FileHandle;
    try {
      fh = await open(
        join(root, ...segments),
        constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      );
    } catch {
      throw new ViewPathError(`${segments.join("/")}: not found`, 404);
    }
    try {
      const st = await fh.stat();
      // a swapped ancestor (race) shows in the descriptor's real path
      const real = await readlink(`/proc/self/fd/${fh.fd}`).catch(() => undefined);
      if (!st.isFile() || (real !== undefined && !within(real)))
        throw new ViewPathError(`${segments.join("/")}: not a plain file under the root`, 404);
      return fh;
    } catch (e) {
      await fh.close();
      throw e;
    }
  }

  return {
    dir: root,
    async readText(segments, maxBytes) {
      const fh = await openFile(segments);
      try {
        const { size } = await fh.stat();
        if (size > maxBytes)
          throw new ViewPathError(
            `${segments.join("/")} is ${size} bytes, over the ${maxBytes}-byte cap`,
            413,
          );
        const buf = Buffer.alloc(size);
        const { bytesRead } = await fh.read(buf, 0, size, 0);
        return buf.subarray(0, bytesRead).toString("utf8");
      } finally {
        await fh.close();
      }
    },
    async readRange(segments, start, end, maxBytes) {
      const fh = await openFile(segments);
      try {
        const { size } = await fh.stat();
        const from = Math.max(0, Math.min(start, size));
        const to = Math.max(from, Math.min(end, size, from + maxBytes));
        const buf = Buffer.alloc(to - from);
        const { bytesRead } = await fh.read(buf, 0, to - from, from);
        return buf.subarray(0, bytesRead);
      } finally {
        await fh.close();
      }
    },
    async *chunks(segments, chunkBytes) {
      const fh = await openFile(segments);
      try {
        const buf = Buffer.alloc(chunkBytes);
        for (let pos = 0; ; ) {
          const { bytesRead } = await fh.read(buf, 0, chunkBytes, pos);
          if (bytesRead === 0) return;
          pos += bytesRead;
          yield buf.subarray(0, bytesRead);
        }
      } finally {
        await fh.close();
      }
    },
    async stat(segments) {
      try {
        const fh = await openFile(segments);
        try {
          const st = await fh.stat();
          return { size: st.size, mtimeMs: st.mtimeMs };
        } finally {
          await fh.close();
        }
      } catch (e) {
        if (e instanceof ViewPathError && e.status === 404) return undefined;
        throw e;
      }
    },
    async listDirs(segments) {
      await checkAncestors([...segments, "x"]);
      const entries = await readdir(join(root, ...segments), { withFileTypes: true }).catch(() => []);
      return entries
        .filter((d) => d.isDirectory() && SEGMENT.test(d.name))
        .map((d) => d.name)
        .sort();
    },
  };
}
