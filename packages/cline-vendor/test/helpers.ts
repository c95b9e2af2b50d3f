/**
 * Small helpers for this package's own tests. (cline-vendor is a leaf: its tests may not import
 * @flakegym/test-utils, which itself depends on cline-vendor.)
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TempDir {
  readonly path: string;
  cleanup(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export async function makeTempDir(prefix = "flakegym-cv-test-"): Promise<TempDir> {
  const path = await mkdtemp(join(tmpdir(), prefix));
  const cleanup = () => rm(path, { recursive: true, force: true, maxRetries: 3 });
  return { path, cleanup, [Symbol.asyncDispose]: cleanup };
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === "object" ? resolve(addr.port) : reject(new Error("no port"))));
    });
  });
}

/** pids of processes whose command line contains `needle` (Linux /proc). */
export async function findProcesses(needle: string): Promise<number[]> {
  const out: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = (await readFile(`/proc/${name}/cmdline`, "utf8")).replaceAll("\0", " ");
      if (cmdline.includes(needle)) out.push(Number(name));
    } catch {
      // ended while we looked
    }
  }
  return out;
}

export async function waitFor(check: () => Promise<boolean> | boolean, timeoutMs = 10_000, stepMs = 50) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** Kills (SIGKILL, whole group) whatever tracked process is still alive. */
export function processReaper() {
  const pids = new Set<number>();
  return {
    track(pid: number | undefined) {
      if (pid !== undefined) pids.add(pid);
    },
    killAll() {
      for (const pid of pids) {
        for (const target of [-pid, pid]) {
          try {
            process.kill(target, "SIGKILL");
          } catch {
            // gone
          }
        }
      }
      pids.clear();
    },
  };
}
