import { constants } from "node:fs";
import { access, readdir, stat, statfs } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { UsageError } from "../errors.js";
import { isLockFile } from "./run-lock.js";

/**
 * Filesystems no run writes to (statfs f_type): proc, sysfs, devpts, cgroup v1/v2, debugfs,
 * securityfs, tracefs. On /proc a recursive mkdir never returns (Node 20 retries it for ever).
 * (devtmpfs shares tmpfs's magic number, and a tmpfs is a fine place for a run.)
 */
const VIRTUAL_FS = new Map<number, string>([
  [0x9fa0, "proc"],
  [0x62656572, "sysfs"],
  [0x1cd1, "devpts"],
  [0x27e0eb, "cgroup"],
  [0x63677270, "cgroup2"],
  [0x64626720, "debugfs"],
  [0x73636673, "securityfs"],
  [0x74726163, "tracefs"],
]);

/** The path itself when it exists, else its nearest existing ancestor; with what it is. */
async function nearestExisting(path: string): Promise<{ path: string; isDir: boolean }> {
  for (let p = path; ; p = dirname(p)) {
    try {
      return { path: p, isDir: (await stat(p)).isDirectory() };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
      if (dirname(p) === p) return { path: p, isDir: true };
    }
  }
}

/**
 * Checks a directory flag (`--out`, `--state-dir`) before anything starts: not empty, not a file
 * nor under one, not on a virtual filesystem, writable where it will be made. Returns it absolute.
 * Every refusal is a usage error naming the flag (exit 2).
 */
export async function checkOutDir(flag: string, value: string, cwd: string): Promise<string> {
  if (value.trim() === "") throw new UsageError(`${flag} is empty`, `pass ${flag} <dir>`);
  const path = resolve(cwd, value);
  const near = await nearestExisting(path);
  if (!near.isDir) {
    const what = near.path === path ? "is a file" : `is under ${near.path}, which is a file`;
    throw new UsageError(`${flag} ${value}: ${path} ${what}`, `pass ${flag} <dir> naming a directory`);
  }
  const fs = VIRTUAL_FS.get((await statfs(near.path)).type);
  if (fs !== undefined)
    throw new UsageError(
      `${flag} ${value}: ${near.path} is on the ${fs} filesystem, where no run can be written`,
      `pass ${flag} <dir> on a real disk`,
    );
  try {
    await access(near.path, constants.W_OK | constants.X_OK);
  } catch {
    throw new UsageError(
      `${flag} ${value}: ${near.path} is not writable`,
      `pass ${flag} <dir> you can write`,
    );
  }
  return path;
}

/** A new run's directory holds nothing but (maybe) its lock; else a usage error pointing at --resume. */
export async function checkNewRunDir(dir: string): Promise<void> {
  const names = await readdir(dir).catch(() => [] as string[]);
  if (names.some((n) => !isLockFile(n)))
    throw new UsageError(
      `--out ${dir} is not empty`,
      `continue that run with --resume ${dir}, or pick another --out`,
      "E_OUT_EXISTS",
    );
}
