import { readdirSync, readFileSync } from "node:fs";
import { isStoppedStat } from "./sandbox.js";

/**
 * A stopped process the agent's commands could not have stopped (issue 46 with issue 42's two
 * users): in an agent sandbox of two users (agent-apart.ts) the supervisor, cline-host and the core
 * run as another host uid than the agent's commands, which hold no capabilities, so a stop of one
 * of them is the machine's doing. Looked for only once a heartbeat is overdue (a scan of /proc).
 */

export interface ProcRow {
  readonly pid: number;
  readonly ppid: number;
  readonly uid: number;
  readonly stopped: boolean;
}

/** The descendants of `root` among `rows` (not `root` itself). Pure. */
export function descendantsOf(rows: readonly ProcRow[], root: number): ProcRow[] {
  const kids = new Map<number, ProcRow[]>();
  for (const r of rows) kids.set(r.ppid, [...(kids.get(r.ppid) ?? []), r]);
  const out: ProcRow[] = [];
  const todo = [root];
  const seen = new Set<number>([root]);
  while (todo.length > 0) {
    for (const k of kids.get(todo.pop() as number) ?? []) {
      if (seen.has(k.pid)) continue;
      seen.add(k.pid);
      out.push(k);
      todo.push(k.pid);
    }
  }
  return out;
}

/** The first stopped descendant of `root` owned by host uid `uid`, else undefined. Pure. */
export function stoppedOwnedBy(rows: readonly ProcRow[], root: number, uid: number): ProcRow | undefined {
  return stoppedDescendantOf(rows, root, (r) => r.uid === uid);
}

/** The first stopped descendant of `root` that `is` accepts (asked only of stopped ones), else undefined. */
export function stoppedDescendantOf(
  rows: readonly ProcRow[],
  root: number,
  is: (r: ProcRow) => boolean,
): ProcRow | undefined {
  return descendantsOf(rows, root).find((r) => r.stopped && is(r));
}

/** One row per readable process of /proc; processes gone mid-scan are left out. */
export function readProcRows(): ProcRow[] {
  const rows: ProcRow[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const row = readProcRow(Number(name));
    if (row) rows.push(row);
  }
  return rows;
}

function readProcRow(pid: number): ProcRow | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const after = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const uidLine = readFileSync(`/proc/${pid}/status`, "utf8").match(/^Uid:\s+(\d+)/m);
    if (!uidLine) return undefined;
    return { pid, ppid: Number(after[1]), uid: Number(uidLine[1]), stopped: isStoppedStat(stat) };
  } catch {
    return undefined;
  }
}
