import { readFile } from "node:fs/promises";

/** Resident set size of a process in bytes (Linux /proc), or undefined when it cannot be read. */
export async function processRssBytes(pid: number): Promise<number | undefined> {
  try {
    const status = await readFile(`/proc/${pid}/status`, "utf8");
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return m ? Number(m[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}
