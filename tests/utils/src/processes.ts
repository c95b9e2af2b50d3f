import { open, readdir, readFile } from "node:fs/promises";

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

/**
 * Whether a live process's memory holds `needle` (as UTF-8/Latin-1 bytes or as UTF-16LE, the two
 * ways V8 stores a string), read from /proc/<pid>/mem region by region (needs root or ptrace
 * rights). `scannedBytes` says how much was read, so a caller can tell a real "absent" from a scan
 * that read nothing.
 */
export async function processMemoryHolds(
  pid: number,
  needle: string,
): Promise<{ found: boolean; scannedBytes: number }> {
  const patterns = [Buffer.from(needle, "utf8"), Buffer.from(needle, "utf16le")];
  const overlap = Math.max(...patterns.map((p) => p.length)) - 1;
  const regions = (await readFile(`/proc/${pid}/maps`, "utf8"))
    .split("\n")
    .map((l) => l.split(/\s+/))
    .filter((f) => f[1]?.startsWith("r") && !f[5]?.startsWith("[v")) // readable; not [vvar]/[vsyscall]
    .map((f) => f[0]!.split("-").map((h) => Number.parseInt(h, 16)) as [number, number]);
  const mem = await open(`/proc/${pid}/mem`, "r");
  let scannedBytes = 0;
  const chunk = Buffer.alloc(8 * 1024 * 1024);
  try {
    for (const [start, end] of regions) {
      let tail = Buffer.alloc(0);
      for (let at = start; at < end; at += chunk.length) {
        const want = Math.min(chunk.length, end - at);
        const { bytesRead } = await mem.read(chunk, 0, want, at).catch(() => ({ bytesRead: 0 }));
        if (bytesRead === 0) break;
        scannedBytes += bytesRead;
        const window = Buffer.concat([tail, chunk.subarray(0, bytesRead)]);
        if (patterns.some((p) => window.includes(p))) return { found: true, scannedBytes };
        tail = window.subarray(Math.max(0, window.length - overlap));
      }
    }
  } finally {
    await mem.close();
  }
  return { found: false, scannedBytes };
}
