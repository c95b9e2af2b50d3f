import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { FlakegymError } from "../errors.js";

/** Who holds a lock: written into the lock directory right after it is created. */
interface Owner {
  readonly pid: number;
  readonly host: string;
  readonly since: string;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function readOwner(dir: string): Promise<Owner | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, "owner.json"), "utf8")) as Owner;
  } catch {
    return undefined;
  }
}

/**
 * Whether a lock dir is stale: its owner process is gone (same host), or it has no owner file and
 * is older than `graceMs` (the owner died between mkdir and writing the file), or it is older than
 * `maxAgeMs` whatever it says.
 */
async function isStale(dir: string, graceMs: number, maxAgeMs: number): Promise<boolean> {
  let age: number;
  try {
    age = Date.now() - (await stat(dir)).mtimeMs;
  } catch {
    return false; // released meanwhile
  }
  if (age > maxAgeMs) return true;
  const owner = await readOwner(dir);
  if (!owner) return age > graceMs;
  return owner.host === hostname() && !alive(owner.pid);
}

export interface LockOptions {
  readonly signal?: AbortSignal;
  /** Give up waiting after this long (default 2 h: a long snapshot build may hold the lock). */
  readonly timeoutMs?: number;
  readonly pollMs?: number;
  /** Called once when the lock is held by someone else and we start waiting. */
  readonly onWait?: (owner: { pid: number; host: string } | undefined) => void;
}

/**
 * A cross-process lock: `mkdir` is atomic, so whoever creates `<dir>` holds it. Stale locks
 * (owner dead) are broken. Returns a release function.
 */
export async function acquireLock(dir: string, opts: LockOptions = {}): Promise<() => Promise<void>> {
  const deadline = Date.now() + (opts.timeoutMs ?? 2 * 3600_000);
  let announced = false;
  for (;;) {
    opts.signal?.throwIfAborted();
    try {
      await mkdir(dir);
      const owner: Owner = { pid: process.pid, host: hostname(), since: new Date().toISOString() };
      await writeFile(join(dir, "owner.json"), JSON.stringify(owner));
      return async () => {
        await rm(dir, { recursive: true, force: true });
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") {
        await mkdir(join(dir, ".."), { recursive: true });
        continue;
      }
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    }
    if (await isStale(dir, 10_000, 6 * 3600_000)) {
      // Break it by renaming first, so two breakers cannot both delete a fresh lock.
      const graveyard = `${dir}.stale-${process.pid}-${Date.now()}`;
      try {
        const { rename } = await import("node:fs/promises");
        await rename(dir, graveyard);
        await rm(graveyard, { recursive: true, force: true });
      } catch {
        // someone else broke or released it
      }
      continue;
    }
    if (!announced) {
      announced = true;
      const o = await readOwner(dir);
      opts.onWait?.(o ? { pid: o.pid, host: o.host } : undefined);
    }
    if (Date.now() > deadline) {
      const o = await readOwner(dir);
      throw new FlakegymError(
        "E_LOCK_TIMEOUT",
        `timed out waiting for lock ${dir}${o ? ` held by pid ${o.pid} on ${o.host}` : ""}`,
        {
          hint: `if no flakegym process is building this snapshot, remove ${dir}`,
        },
      );
    }
    await new Promise((r) => setTimeout(r, opts.pollMs ?? 200));
  }
}
