import { readdir, readFile } from "node:fs/promises";

/** One row of the process table, read from /proc. */
export interface ProcInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  readonly cmdline: string;
}

/** Reads the whole process table from /proc (Linux). */
export async function processTable(): Promise<ProcInfo[]> {
  const out: ProcInfo[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, "utf8");
      // comm may contain spaces and parens: fields start after the last ')'.
      const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const cmdline = (await readFile(`/proc/${name}/cmdline`, "utf8")).replaceAll("\0", " ").trim();
      out.push({ pid: Number(name), ppid: Number(rest[1]), pgid: Number(rest[2]), cmdline });
    } catch {
      // the process ended while we read it
    }
  }
  return out;
}

/** Processes whose command line contains `needle`. */
export async function findProcesses(needle: string): Promise<ProcInfo[]> {
  return (await processTable()).filter((p) => p.cmdline.includes(needle) && p.pid !== process.pid);
}

/** Polls until `check` holds or the deadline passes; returns the last value of `check`. */
export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 10_000, stepMs = 100) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** Tracks spawned pids and kills whatever is still alive at cleanup. */
export function processReaper() {
  const pids = new Set<number>();
  return {
    track(pid: number | undefined) {
      if (pid !== undefined) pids.add(pid);
    },
    killAll() {
      for (const pid of pids) {
        try {
          process.kill(-pid, "SIGKILL");
        } catch {
          try {
            process.kill(pid, "SIGKILL");
          } catch {
            // already gone
          }
        }
      }
      pids.clear();
    },
  };
}
