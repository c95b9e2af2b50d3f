import { readFile } from "node:fs/promises";

/**
 * A reused worker's memory as the reset's growth rule reads it (issue 47): the anonymous memory
 * (`RssAnon`: heaps, stacks) of its kept processes — supervisor, cline-host, cline-core. What grows
 * when a core keeps something of each task; not the cgroup's whole usage, which also charges the
 * page cache and the tmpfs pages of forks that come and go with each trajectory.
 */

/** `RssAnon` of a /proc/<pid>/status text, kB; undefined when absent (a kernel thread, a zombie). Pure. */
export function rssAnonKb(status: string): number | undefined {
  const m = /^RssAnon:\s+(\d+) kB$/m.exec(status);
  return m ? Number(m[1]) : undefined;
}

/** The sum of `RssAnon` over `pids`, MiB; undefined when none could be read. */
export async function keptAnonMb(pids: readonly number[]): Promise<number | undefined> {
  const kb = await Promise.all(
    pids.map(async (p) => rssAnonKb(await readFile(`/proc/${p}/status`, "utf8").catch(() => ""))),
  );
  const read = kb.filter((k): k is number => k !== undefined);
  return read.length === 0 ? undefined : read.reduce((a, b) => a + b, 0) / 1024;
}
