import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { processTable } from "@flakegym/test-utils";

/**
 * What a run left behind on this machine, found by its marks: the scenario's private TMPDIR
 * (every worker, fork and state directory of the runner lives under it) and the run id (in worker
 * ids, hence in process command lines and cgroup names).
 */
export interface Leftovers {
  readonly processes: readonly string[];
  readonly mounts: readonly string[];
  readonly cgroups: readonly string[];
  readonly dirs: readonly string[];
}

export const leftoverCount = (l: Leftovers) =>
  l.processes.length + l.mounts.length + l.cgroups.length + l.dirs.length;

export function describeLeftovers(l: Leftovers): string[] {
  return [
    ...l.processes.map((p) => `process ${p}`),
    ...l.mounts.map((m) => `mount ${m}`),
    ...l.cgroups.map((c) => `cgroup ${c}`),
    ...l.dirs.map((d) => `directory ${d}`),
  ];
}

/** cgroup directories named `flakegym/<id>` in every hierarchy (v1 controllers and v2). */
async function flakegymCgroups(): Promise<string[]> {
  const out: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    if (depth > 6) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const p = join(dir, e.name);
      if (e.name === "flakegym") {
        for (const g of await readdir(p, { withFileTypes: true }).catch(() => []))
          if (g.isDirectory()) out.push(join(p, g.name));
      } else await walk(p, depth + 1);
    }
  };
  await walk("/sys/fs/cgroup", 0);
  return out;
}

/**
 * Everything carrying one of `marks` (paths, run ids); what flakegym made in `tmpRoot` (its
 * `flakegym-*` entries: workers, forks, scratch) and is still there counts as directories.
 */
export async function findLeftovers(
  marks: readonly string[],
  tmpRoot: string,
  keep: readonly string[] = [],
): Promise<Leftovers> {
  const has = (s: string) => marks.some((m) => m !== "" && s.includes(m));
  const processes = (await processTable())
    .filter((p) => p.pid !== process.pid && has(p.cmdline))
    .map((p) => `${p.pid} ${p.cmdline.slice(0, 160)}`);
  const mountinfo = await readFile("/proc/self/mountinfo", "utf8").catch(() => "");
  const mounts = mountinfo
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((mp) => mp !== "" && has(mp));
  const cgroups = (await flakegymCgroups()).filter((c) => has(c));
  const dirs: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
      const p = join(dir, e.name);
      if (depth === 0 && !e.name.startsWith("flakegym")) continue; // not ours (e.g. tsx's cache)
      if (keep.some((k) => p === k || p.startsWith(`${k}/`))) continue;
      // report directories that hold something, at most two levels down (the owner, its workers)
      // a top-level directory is a shared container (flakegym-workers): what is in it counts
      if (e.isDirectory() && depth < 1) await walk(p, depth + 1);
      else if (e.isDirectory()) {
        const inside = await readdir(p).catch(() => [] as string[]);
        dirs.push(`${p} (holds: ${inside.slice(0, 8).join(", ") || "nothing"})`);
      } else dirs.push(p);
    }
  };
  await walk(tmpRoot, 0);
  return { processes, mounts, cgroups, dirs };
}

/**
 * What the process `pid` made under `tmpRoot` and left there: directories (`flakegym-*`: scratch,
 * worker dirs) whose owner.json names it, and the mounts inside them.
 */
export async function ownedBy(tmpRoot: string, pid: number): Promise<string[]> {
  const owned: string[] = [];
  const visit = async (dir: string, depth: number): Promise<void> => {
    const owner = await readFile(join(dir, "owner.json"), "utf8").catch(() => undefined);
    if (owner !== undefined) {
      if ((JSON.parse(owner) as { pid: number }).pid === pid) owned.push(dir);
      return;
    }
    if (depth < 2)
      for (const d of await readdir(dir).catch(() => [] as string[])) await visit(join(dir, d), depth + 1);
  };
  for (const d of await readdir(tmpRoot).catch(() => [] as string[]))
    if (d.startsWith("flakegym-")) await visit(join(tmpRoot, d), 1);
  const mounts = (await readFile("/proc/self/mountinfo", "utf8"))
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "");
  return [...owned, ...mounts.filter((m) => owned.some((o) => m.startsWith(`${o}/`)))];
}
