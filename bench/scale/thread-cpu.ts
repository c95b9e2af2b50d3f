import { readdirSync, readFileSync } from "node:fs";

/**
 * The runner's CPU time by thread (/proc/self/task/<tid>/stat, user + system): the main thread
 * (the event loop), and the others largest first. Node names every thread `node`, so the others
 * are told apart by size only: the gateway's thread is the only other one running JavaScript
 * beside tsx's loader; the rest are V8's GC helpers and libuv's file-system pool.
 */

/** utime + stime of one /proc stat line, in clock ticks (fields 14 and 15). Pure. */
export function ticksOfStat(stat: string): number | undefined {
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // rest[0] is field 3 (state): field k is rest[k - 3]
  const t = Number(rest[14 - 3]) + Number(rest[15 - 3]);
  return Number.isFinite(t) ? t : undefined;
}

/** Every thread's CPU ticks now (a thread that ended in between is gone: its time is not counted). */
export function threadTicks(): Map<number, number> {
  const out = new Map<number, number>();
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const t = ticksOfStat(readFileSync(`/proc/self/task/${tid}/stat`, "utf8"));
      if (t !== undefined) out.set(Number(tid), t);
    } catch {
      // the thread ended while we listed
    }
  }
  return out;
}

export interface ThreadCpu {
  /** The main thread's CPU over the run, ms. */
  readonly mainMs: number;
  /** The other threads' CPU over the run, ms, largest first (the first three). */
  readonly topOthersMs: readonly number[];
  /** All other threads together, ms. */
  readonly othersMs: number;
}

/** What each thread ran between two readings (threads born in between from zero), ms. Pure. */
export function threadCpuSplit(
  before: ReadonlyMap<number, number>,
  after: ReadonlyMap<number, number>,
  mainTid: number,
  tickMs: number,
): ThreadCpu {
  const others: number[] = [];
  let mainMs = 0;
  for (const [tid, t] of after) {
    const ms = (t - (before.get(tid) ?? 0)) * tickMs;
    if (tid === mainTid) mainMs = ms;
    else others.push(ms);
  }
  others.sort((a, b) => b - a);
  return { mainMs, topOthersMs: others.slice(0, 3), othersMs: others.reduce((s, x) => s + x, 0) };
}
