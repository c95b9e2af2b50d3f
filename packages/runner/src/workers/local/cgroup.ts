import { access, mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { CGROUP_PARENT, ownerTag, selfOwner } from "../../gc/owner.js";

/**
 * Per-worker resource control through cgroups. Three shapes, picked by probing at start:
 * - "v2": a unified hierarchy with the pids/memory/cpu controllers delegated to us;
 * - "v1": the legacy per-controller hierarchies (this machine kind: hybrid v1+v2, root);
 * - "none": not writable → the caller falls back to rlimits (prlimit) only.
 */
export type CgroupKind = "v1" | "v2" | "none";

export interface CgroupLimits {
  readonly memoryMb: number;
  readonly pids: number;
}

export interface CgroupUsage {
  /** CPU time used by everything in the group, µs. */
  readonly cpuUsec: number;
  readonly memoryBytes: number;
  readonly pids: number;
}

/** A worker's cgroup(s). Processes join by writing their pid to each of `procsFiles`. */
export interface WorkerCgroup {
  readonly kind: CgroupKind;
  /** The `cgroup.procs` files a process must write itself into (one per v1 hierarchy). */
  readonly procsFiles: readonly string[];
  usage(): Promise<CgroupUsage | undefined>;
  /** Every pid in the group. */
  pids(): Promise<number[]>;
  /** SIGKILLs every process in the group until it is empty (or the deadline passes). */
  killAll(deadlineMs?: number): Promise<number[]>;
  /** Whether the memory limit was hit (OOM kill) since creation. */
  memoryLimitHit(): Promise<boolean>;
  /**
   * Bytes of tmpfs/shared pages charged to the group (memory.stat `shmem`): the files a worker wrote
   * to a tmpfs (its workspace's upper layer) count against its memory limit. Undefined: unreadable.
   */
  shmemBytes(): Promise<number | undefined>;
  /** The kernel's counters of enforced limits (compare before/after an exec). */
  events(): Promise<LimitEvents>;
  remove(): Promise<void>;
}

/** Counters of limits the kernel enforced in a group: OOM kills and refused forks. */
export interface LimitEvents {
  readonly oomKills: number;
  readonly pidsRejected: number;
}

/** Where one group's files are: a dir per v1 hierarchy, or one v2 dir. */
export type CgroupDirs =
  | { readonly kind: "v1"; readonly pids: string; readonly memory: string; readonly cpuacct: string }
  | { readonly kind: "v2"; readonly dir: string };

const ROOT = "/sys/fs/cgroup";
const GROUP = CGROUP_PARENT;

async function exists(p: string): Promise<boolean> {
  try {
    await access(p);
    return true;
  } catch {
    return false;
  }
}

async function readNumber(file: string): Promise<number | undefined> {
  try {
    const n = Number((await readFile(file, "utf8")).trim().split(/\s+/)[0]);
    return Number.isFinite(n) ? n : undefined;
  } catch {
    return undefined;
  }
}

/** The cgroup path of this process in v1 hierarchy `controller` (e.g. memory → /process_api/x). */
async function selfPathV1(controller: string): Promise<string> {
  const text = await readFile("/proc/self/cgroup", "utf8");
  for (const line of text.split("\n")) {
    const [, ctrls, path] = line.split(":");
    if (ctrls?.split(",").includes(controller)) return path ?? "/";
  }
  return "/";
}

async function selfPathV2(): Promise<string> {
  const text = await readFile("/proc/self/cgroup", "utf8");
  const line = text.split("\n").find((l) => l.startsWith("0::"));
  return line ? line.slice(3) : "/";
}

let probed: Promise<CgroupKind> | undefined;

/** Which cgroup shape we can use here (probed once: creates and removes a test group). */
export function probeCgroups(): Promise<CgroupKind> {
  probed ??= (async (): Promise<CgroupKind> => {
    // Pure v2 with delegated controllers.
    if (await exists(join(ROOT, "cgroup.controllers"))) {
      try {
        const base = join(ROOT, await selfPathV2());
        const ctrls = (await readFile(join(base, "cgroup.controllers"), "utf8")).split(/\s+/);
        if (ctrls.includes("pids") && ctrls.includes("memory")) {
          const probe = join(base, `${GROUP}-probe-${process.pid}`);
          await mkdir(probe);
          await rmdir(probe);
          return "v2";
        }
      } catch {
        // fall through
      }
      return "none";
    }
    try {
      for (const c of ["pids", "memory", "cpuacct"]) {
        const probe = join(ROOT, c, await selfPathV1(c), `${GROUP}-probe-${process.pid}`);
        await mkdir(probe);
        await rmdir(probe);
      }
      return "v1";
    } catch {
      return "none";
    }
  })();
  return probed;
}

async function killPids(read: () => Promise<number[]>, deadlineMs: number): Promise<number[]> {
  const killed = new Set<number>();
  const end = Date.now() + deadlineMs;
  for (;;) {
    const pids = await read();
    if (pids.length === 0) return [...killed];
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
        killed.add(pid);
      } catch {
        // already gone
      }
    }
    if (Date.now() > end) return [...killed];
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function readPids(file: string): Promise<number[]> {
  try {
    return (await readFile(file, "utf8")).split("\n").filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

async function rmdirRetry(dir: string): Promise<void> {
  for (let i = 0; i < 50; i++) {
    try {
      await rmdir(dir);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

async function counter(file: string, key: string): Promise<number> {
  const text = await readFile(file, "utf8").catch(() => "");
  const m = new RegExp(`^${key} (\\d+)`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

/** `shmem` of a memory.stat (v1's hierarchical `total_shmem` first), undefined when unreadable. */
async function readShmem(file: string): Promise<number | undefined> {
  const text = await readFile(file, "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  const m = /^total_shmem (\d+)/m.exec(text) ?? /^shmem (\d+)/m.exec(text);
  return m ? Number(m[1]) : undefined;
}

/** The OOM kills and refused forks counted in a group so far. */
export async function readLimitEvents(d: CgroupDirs): Promise<LimitEvents> {
  const [memory, pids] = d.kind === "v1" ? [d.memory, d.pids] : [d.dir, d.dir];
  return {
    oomKills: await counter(
      join(memory, d.kind === "v1" ? "memory.oom_control" : "memory.events"),
      "oom_kill",
    ),
    pidsRejected: await counter(join(pids, "pids.events"), "max"),
  };
}

/** CPU, memory and pids used by a group now; undefined when its files cannot be read. */
export async function readUsage(d: CgroupDirs): Promise<CgroupUsage | undefined> {
  if (d.kind === "v1") {
    const cpuNs = await readNumber(join(d.cpuacct, "cpuacct.usage"));
    const mem = await readNumber(join(d.memory, "memory.usage_in_bytes"));
    const pids = await readNumber(join(d.pids, "pids.current"));
    if (cpuNs === undefined || mem === undefined || pids === undefined) return undefined;
    return { cpuUsec: Math.round(cpuNs / 1000), memoryBytes: mem, pids };
  }
  const stat = await readFile(join(d.dir, "cpu.stat"), "utf8").catch(() => "");
  const cpu = /usage_usec (\d+)/.exec(stat);
  const mem = await readNumber(join(d.dir, "memory.current"));
  const pids = await readNumber(join(d.dir, "pids.current"));
  if (!cpu || mem === undefined || pids === undefined) return undefined;
  return { cpuUsec: Number(cpu[1]), memoryBytes: mem, pids };
}

/** The dirs of a group given by its path below each hierarchy (a container's `CgroupPath`). */
export async function cgroupDirsAt(path: string): Promise<CgroupDirs> {
  if (await exists(join(ROOT, "cgroup.controllers"))) return { kind: "v2", dir: join(ROOT, path) };
  return {
    kind: "v1",
    pids: join(ROOT, "pids", path),
    memory: join(ROOT, "memory", path),
    cpuacct: join(ROOT, "cpuacct", path),
  };
}

async function createV1(id: string, limits: CgroupLimits): Promise<WorkerCgroup> {
  const dirs: Record<"pids" | "memory" | "cpuacct", string> = {
    pids: join(ROOT, "pids", await selfPathV1("pids"), GROUP, id),
    memory: join(ROOT, "memory", await selfPathV1("memory"), GROUP, id),
    cpuacct: join(ROOT, "cpuacct", await selfPathV1("cpuacct"), GROUP, id),
  };
  for (const d of Object.values(dirs)) await mkdir(d, { recursive: true });
  await writeFile(join(dirs.pids, "pids.max"), String(limits.pids));
  await writeFile(join(dirs.memory, "memory.limit_in_bytes"), String(limits.memoryMb * 1024 * 1024));
  // No swap on this kind; where memsw exists, cap it too so the limit is not dodged by swapping.
  try {
    await writeFile(join(dirs.memory, "memory.memsw.limit_in_bytes"), String(limits.memoryMb * 1024 * 1024));
  } catch {
    // memsw accounting disabled
  }
  const procsFiles = Object.values(dirs).map((d) => join(d, "cgroup.procs"));
  const initialFailcnt = (await readNumber(join(dirs.memory, "memory.failcnt"))) ?? 0;
  const readAll = async () => [...new Set((await Promise.all(procsFiles.map(readPids))).flat())];
  return {
    kind: "v1",
    procsFiles,
    usage: () => readUsage({ kind: "v1", ...dirs }),
    events: () => readLimitEvents({ kind: "v1", ...dirs }),
    pids: readAll,
    killAll: (deadlineMs = 5000) => killPids(readAll, deadlineMs),
    shmemBytes: () => readShmem(join(dirs.memory, "memory.stat")),
    async memoryLimitHit() {
      const oom = await readFile(join(dirs.memory, "memory.oom_control"), "utf8").catch(() => "");
      const kills = /oom_kill (\d+)/.exec(oom);
      if (kills && Number(kills[1]) > 0) return true;
      return ((await readNumber(join(dirs.memory, "memory.failcnt"))) ?? 0) > initialFailcnt;
    },
    async remove() {
      await killPids(readAll, 2000);
      for (const d of Object.values(dirs)) await rmdirRetry(d);
    },
  };
}

async function createV2(id: string, limits: CgroupLimits): Promise<WorkerCgroup> {
  const parent = join(ROOT, await selfPathV2(), GROUP);
  await mkdir(parent, { recursive: true });
  try {
    await writeFile(join(parent, "cgroup.subtree_control"), "+pids +memory +cpu");
  } catch {
    // already enabled, or only some are delegated
  }
  const dir = join(parent, id);
  await mkdir(dir);
  await writeFile(join(dir, "pids.max"), String(limits.pids));
  await writeFile(join(dir, "memory.max"), String(limits.memoryMb * 1024 * 1024));
  try {
    await writeFile(join(dir, "memory.swap.max"), "0");
  } catch {
    // no swap controller
  }
  const procs = join(dir, "cgroup.procs");
  const readAll = () => readPids(procs);
  const killAll = async (deadlineMs = 5000) => {
    const before = await readAll();
    try {
      await writeFile(join(dir, "cgroup.kill"), "1");
    } catch {
      // kernel < 5.14
    }
    const rest = await killPids(readAll, deadlineMs);
    return [...new Set([...before, ...rest])];
  };
  return {
    kind: "v2",
    procsFiles: [procs],
    usage: () => readUsage({ kind: "v2", dir }),
    events: () => readLimitEvents({ kind: "v2", dir }),
    pids: readAll,
    killAll,
    shmemBytes: () => readShmem(join(dir, "memory.stat")),
    async memoryLimitHit() {
      const ev = await readFile(join(dir, "memory.events"), "utf8").catch(() => "");
      return /oom_kill [1-9]/.test(ev) || /max [1-9]/.test(ev);
    },
    async remove() {
      await killAll(2000);
      await rmdirRetry(dir);
    },
  };
}

/**
 * Creates the cgroup(s) for one worker (named `<owner tag>-<id>`), or returns a "none" group when cgroups are not usable.
 */
export async function createWorkerCgroup(id: string, limits: CgroupLimits): Promise<WorkerCgroup> {
  const kind = await probeCgroups();
  // named after this process (the owner), so `flakegym gc` can tell a dead run's groups
  const name = `${ownerTag(selfOwner())}-${id}`;
  if (kind === "v1") return await createV1(name, limits);
  if (kind === "v2") return await createV2(name, limits);
  return {
    kind: "none",
    procsFiles: [],
    usage: async () => undefined,
    pids: async () => [],
    killAll: async () => [],
    memoryLimitHit: async () => false,
    shmemBytes: async () => undefined,
    events: async () => ({ oomKills: 0, pidsRejected: 0 }),
    remove: async () => {},
  };
}
