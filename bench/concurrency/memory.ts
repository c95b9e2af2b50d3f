/**
 * What a sandboxed worker costs in memory, read from /proc and cgroupfs (Linux): its whole process
 * tree (RSS, and PSS, which splits shared pages among the processes sharing them), its cgroup's
 * charge, and the machine's MemAvailable.
 */
import { readdir, readFile } from "node:fs/promises";

interface Proc {
  readonly pid: number;
  readonly ppid: number;
  readonly cmdline: string;
}

async function procs(): Promise<Proc[]> {
  const out: Proc[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = await readFile(`/proc/${name}/stat`, "utf8");
      const cmdline = (await readFile(`/proc/${name}/cmdline`, "utf8")).replaceAll("\0", " ");
      out.push({
        pid: Number(name),
        ppid: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]),
        cmdline,
      });
    } catch {
      // ended while we looked
    }
  }
  return out;
}

/** pids of the processes whose command line contains a needle, and all their descendants. */
export async function processTrees(needles: readonly string[]): Promise<Map<string, number[]>> {
  const all = await procs();
  const children = new Map<number, number[]>();
  for (const p of all) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const trees = new Map<string, number[]>();
  for (const needle of needles) {
    const seen = new Set(
      all.filter((p) => p.cmdline.includes(needle) && p.pid !== process.pid).map((p) => p.pid),
    );
    const queue = [...seen];
    while (queue.length > 0) {
      for (const c of children.get(queue.shift()!) ?? []) {
        if (!seen.has(c)) {
          seen.add(c);
          queue.push(c);
        }
      }
    }
    trees.set(needle, [...seen]);
  }
  return trees;
}

/** Name and kB fields of /proc/<pid>/smaps_rollup (Rss, Pss); zeros for a process that is gone. */
async function rollup(pid: number): Promise<{ name: string; rssKb: number; pssKb: number }> {
  try {
    const text = await readFile(`/proc/${pid}/smaps_rollup`, "utf8");
    const name = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0").slice(0, 2).join(" ");
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? 0);
    return { name: processKind(name), rssKb: kb("Rss"), pssKb: kb("Pss") };
  } catch {
    return { name: "gone", rssKb: 0, pssKb: 0 };
  }
}

/** A worker process's role from the start of its command line. */
function processKind(cmd: string): string {
  if (cmd.includes("cline-supervisor")) return "supervisor";
  if (cmd.includes("cline-host")) return "cline-host";
  if (cmd.includes("cline-core")) return "cline-core";
  if (cmd.includes("bwrap")) return "bwrap";
  return cmd.split(" ")[0]?.split("/").pop() || "?";
}

/** The memory cgroup file holding the charge of the group a process is in (v1 or v2). */
async function cgroupFile(pid: number | "self"): Promise<string | undefined> {
  try {
    const lines = (await readFile(`/proc/${pid}/cgroup`, "utf8")).split("\n");
    const v1 = lines.find((l) => l.split(":")[1]?.split(",").includes("memory"));
    return v1
      ? `/sys/fs/cgroup/memory${v1.split(":")[2]}/memory.usage_in_bytes`
      : `/sys/fs/cgroup${lines.find((l) => l.startsWith("0::"))?.slice(3)}/memory.current`;
  } catch {
    return undefined;
  }
}

/** The charge (bytes) of the first group among `pids` that is not this process's own group. */
async function workerCgroupBytes(pids: readonly number[]): Promise<number | undefined> {
  const own = await cgroupFile("self");
  for (const pid of [...pids].sort((a, b) => b - a)) {
    const file = await cgroupFile(pid);
    if (!file || file === own) continue;
    try {
      const n = Number((await readFile(file, "utf8")).trim());
      if (Number.isFinite(n)) return n;
    } catch {
      // group gone
    }
  }
  return undefined;
}

export interface TreeMemory {
  readonly processes: number;
  readonly rssMb: number;
  readonly pssMb: number;
  /** PSS MiB by process role (supervisor, cline-host, cline-core, bwrap, …). */
  readonly pssByKindMb: Record<string, number>;
  /** The charge of the worker's own cgroup (page cache of its tmpfs included), MiB; undefined without one. */
  readonly cgroupMb: number | undefined;
}

/** Memory of one process tree (pids from {@link processTrees}). */
export async function treeMemory(pids: readonly number[]): Promise<TreeMemory> {
  const parts = await Promise.all(pids.map(rollup));
  const cg = await workerCgroupBytes(pids);
  const pssByKindMb: Record<string, number> = {};
  for (const p of parts) pssByKindMb[p.name] = (pssByKindMb[p.name] ?? 0) + p.pssKb / 1024;
  return {
    processes: pids.length,
    pssByKindMb,
    rssMb: parts.reduce((a, p) => a + p.rssKb, 0) / 1024,
    pssMb: parts.reduce((a, p) => a + p.pssKb, 0) / 1024,
    cgroupMb: cg === undefined ? undefined : cg / 1048576,
  };
}

/** MemAvailable and MemTotal from /proc/meminfo, MiB. */
export async function machineMemory(): Promise<{ availableMb: number; totalMb: number }> {
  const text = await readFile("/proc/meminfo", "utf8");
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, "m").exec(text)?.[1] ?? 0);
  return { availableMb: kb("MemAvailable") / 1024, totalMb: kb("MemTotal") / 1024 };
}
