import { readFile } from "node:fs/promises";
import { runHostCommand } from "./command-coprocess.js";

/** How one unmount ended: cleanly, detached lazily because it stayed busy, not mounted, or failed. */
export interface UnmountRecord {
  readonly path: string;
  readonly result: "unmounted" | "lazy" | "not-mounted" | "failed";
  readonly detail?: string;
}

/** The mount points listed in a /proc/<pid>/mountinfo text (octal escapes decoded). Pure. */
export function mountPointsOf(mountinfo: string): string[] {
  const out: string[] = [];
  for (const line of mountinfo.split("\n")) {
    const f = line.split(" ");
    if (f.length < 5) continue;
    out.push(f[4]!.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(Number.parseInt(o, 8))));
  }
  return out;
}

/** Every mount point of this process's mount namespace. */
export async function currentMountPoints(): Promise<string[]> {
  return mountPointsOf(await readFile("/proc/self/mountinfo", "utf8"));
}

const BUSY = /busy/i;
const NOT_MOUNTED = /not mounted|no mount point|not found|no such file/i;

async function umount(args: string[]): Promise<{ ok: boolean; stderr: string }> {
  // one long-lived sh runs them: a spawn per umount forks the whole runner (command-coprocess.ts)
  const r = await runHostCommand(["umount", ...args], 30);
  return { ok: r.exitCode === 0, stderr: r.output.trim() };
}

/**
 * Unmounts `path`; while it is busy (a process still has files open there) retries a few times,
 * then detaches it lazily (`umount -l`: gone from the tree now, freed when the last user exits).
 */
export async function unmountRetry(
  path: string,
  o: { attempts?: number; delayMs?: number } = {},
): Promise<UnmountRecord> {
  const attempts = o.attempts ?? 5;
  let last = "";
  for (let i = 0; i < attempts; i++) {
    const r = await umount([path]);
    if (r.ok) return { path, result: "unmounted" };
    if (NOT_MOUNTED.test(r.stderr)) return { path, result: "not-mounted" };
    last = r.stderr;
    if (!BUSY.test(r.stderr)) break;
    await new Promise((res) => setTimeout(res, o.delayMs ?? 200));
  }
  const lazy = await umount(["-l", path]);
  if (lazy.ok)
    return { path, result: "lazy", detail: `busy after ${attempts} attempts (${last}); detached lazily` };
  return { path, result: "failed", detail: `${last}; umount -l: ${lazy.stderr}` };
}
