import { access, mkdir, readdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

/**
 * All the CPU a benchmark run causes, read from a cgroup of its own: the bench process moves
 * itself into a new cgroup v1 `cpuacct` group, so every process it starts — sandboxed workers and
 * scorers whose cgroups the local backend makes *inside* it (it nests worker groups under the
 * process's own group), bare cores, git, the gateway thread — is charged there, even after those
 * processes were SIGKILLed through their cgroup and never reaped, and after their groups were
 * removed (v1 charges every ancestor as the CPU is used).
 *
 * Only the `cpuacct` hierarchy is touched: where it is mounted on its own (not with `cpu`), the
 * move changes no scheduling. Elsewhere (cgroup v2, co-mounted cpu,cpuacct, not root) it is not
 * used and `reason` says why; the caller then counts what it can and says so.
 */
export interface RunCgroup {
  /** CPU seconds used so far by the bench process and everything it started. */
  cpuSeconds(): Promise<number>;
  /**
   * Polls the CPU of every worker group made inside the run's group (every `everyMs`) until
   * stopped; then the last reading of each, seconds by group name. A group's last `everyMs` before
   * its removal is not seen (it stays in the run's total).
   */
  sampleWorkers(everyMs: number): { stop(): Map<string, number> };
  /** Moves the bench process back and removes the group (what is left is said, not hidden). */
  close(): Promise<string | undefined>;
}

const CPUACCT = "/sys/fs/cgroup/cpuacct";

async function selfCpuacctPath(): Promise<string | undefined> {
  const text = await readFile("/proc/self/cgroup", "utf8");
  for (const line of text.split("\n")) {
    const [, ctrls, path] = line.split(":");
    const list = ctrls?.split(",") ?? [];
    if (list.includes("cpuacct")) return list.includes("cpu") ? undefined : (path ?? "/");
  }
  return undefined;
}

/** A `cpuacct` group for this run, or why there is none. */
export async function openRunCgroup(name: string): Promise<RunCgroup | { reason: string }> {
  if (process.getuid?.() !== 0) return { reason: "not root: cannot make a cgroup for the run" };
  const exists = await access(join(CPUACCT, "cpuacct.usage")).then(
    () => true,
    () => false,
  );
  if (!exists) return { reason: "no cgroup v1 cpuacct hierarchy (cgroup v2 is not supported here)" };
  const home = await selfCpuacctPath();
  if (home === undefined) return { reason: "cpuacct is mounted with cpu: moving would change scheduling" };
  const dir = join(CPUACCT, home, name);
  try {
    await mkdir(dir);
    await writeFile(join(dir, "cgroup.procs"), String(process.pid));
  } catch (err) {
    await rmdir(dir).catch(() => {});
    return { reason: `cannot make or join ${dir}: ${(err as Error).message}` };
  }
  const usage = async () => Number((await readFile(join(dir, "cpuacct.usage"), "utf8")).trim()) / 1e9;
  const workers = join(dir, "flakegym");
  return {
    cpuSeconds: usage,
    sampleWorkers(everyMs) {
      const seen = new Map<string, number>();
      let busy = false;
      const timer = setInterval(async () => {
        if (busy) return;
        busy = true;
        try {
          for (const name of await readdir(workers).catch(() => [] as string[])) {
            const v = await readFile(join(workers, name, "cpuacct.usage"), "utf8").catch(() => undefined);
            if (v !== undefined) seen.set(name, Math.max(seen.get(name) ?? 0, Number(v.trim()) / 1e9));
          }
        } finally {
          busy = false;
        }
      }, everyMs);
      return {
        stop() {
          clearInterval(timer);
          return seen;
        },
      };
    },
    async close() {
      await writeFile(join(CPUACCT, home, "cgroup.procs"), String(process.pid)).catch(() => {});
      // the backend's parent of worker groups (left in place by design), then ours
      for (const sub of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
        if (sub.isDirectory()) await rmdir(join(dir, sub.name)).catch(() => {});
      }
      try {
        await rmdir(dir);
        return undefined;
      } catch (err) {
        return `the run's cgroup ${dir} was left (${(err as Error).message}); \`flakegym gc\` sweeps worker groups in it`;
      }
    },
  };
}
