import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

/**
 * The scale bench's harness (the simulated workers with the Nomad double, the upstream model
 * double) is not the runner: it runs at the lowest CPU priority so that on a shared machine it
 * never takes a core from the runner. `idle` starts each harness process under `chrt --idle 0`
 * (SCHED_IDLE: it runs only when no normal task wants the core), `nice` under `nice -n 19`;
 * `normal` as the runner. Every thread a process starts later inherits its policy.
 */

export type HarnessPriority = "idle" | "nice" | "normal";

/** How to start a harness process: the program, and the arguments before node's own. */
export interface Launcher {
  readonly execPath: string;
  readonly prefix: readonly string[];
}

/** The --harness-priority flag's value, checked. Pure. */
export function parseHarnessPriority(value: string): HarnessPriority {
  if (value === "idle" || value === "nice" || value === "normal") return value;
  throw new Error(`bench scale: --harness-priority must be idle, nice or normal, not '${value}'`);
}

/**
 * The launcher of a harness process: node itself wrapped by `chrt --idle 0` or `nice -n 19`
 * (found on PATH: `has`); a wrapper that is missing is an error naming it, not a silent
 * normal priority. Pure.
 */
export function harnessLauncher(
  priority: HarnessPriority,
  nodePath: string,
  has: (tool: string) => boolean,
): Launcher {
  const wrap = (tool: string, args: string[]): Launcher => {
    if (!has(tool))
      throw new Error(
        `bench scale: --harness-priority ${priority} needs '${tool}' on PATH (util-linux/coreutils); ` +
          "install it or pass --harness-priority normal",
      );
    return { execPath: tool, prefix: [...args, nodePath] };
  };
  switch (priority) {
    case "idle":
      return wrap("chrt", ["--idle", "0"]);
    case "nice":
      return wrap("nice", ["-n", "19"]);
    case "normal":
      return { execPath: nodePath, prefix: [] };
  }
}

/** Whether `tool` runs (its --version answers). */
export function hasTool(tool: string): boolean {
  try {
    execFileSync(tool, ["--version"], { stdio: "ignore", timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/** Linux scheduling policies as /proc/<pid>/stat field 41 gives them. */
const POLICIES: Record<number, string> = { 0: "normal", 1: "fifo", 2: "rr", 3: "batch", 5: "idle" };

/**
 * A thread's scheduling policy and nice value from its /proc stat line (fields after the
 * parenthesised command, which may hold spaces). Pure.
 */
export function policyOfStat(stat: string): { policy: string; nice: number } | undefined {
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // rest[0] is field 3 (state): field k is rest[k - 3]
  const nice = Number(rest[19 - 3]);
  const policy = Number(rest[41 - 3]);
  if (!Number.isInteger(nice) || !Number.isInteger(policy)) return undefined;
  return { policy: POLICIES[policy] ?? `policy ${policy}`, nice };
}

/**
 * What every thread of process `pid` runs at, e.g. `idle ×11` or `normal ×10, idle ×1` (read
 * from /proc, so the output states what was in force, not what was asked).
 */
export function describePolicy(pid: number): string {
  const counts = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      const p = policyOfStat(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8"));
      const key = p ? (p.policy === "normal" && p.nice !== 0 ? `nice ${p.nice}` : p.policy) : "unread";
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  } catch (err) {
    return `unread (${(err as Error).message})`;
  }
  return [...counts].map(([k, v]) => `${k} ×${v}`).join(", ");
}
