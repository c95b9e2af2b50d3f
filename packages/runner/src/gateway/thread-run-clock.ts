import { closeSync, openSync, readSync } from "node:fs";

/**
 * The CPU time the calling thread has run, from its schedstat (`run_ns wait_ns slices`, Linux).
 * On a shared machine a thread's wall time includes its waits for a core; its run time does not.
 * The gateway times each call's own part against it when asked (PolicyGatewayOptions
 * measureRunTime), so that its "added latency" is the gateway's, not the machine's.
 */

/** The run time, ms, of a schedstat line; undefined when unreadable. Pure. */
export function schedRunMs(line: string): number | undefined {
  const trimmed = line.trim();
  const run = Number(trimmed.split(/\s+/)[0]);
  return trimmed !== "" && Number.isFinite(run) ? run / 1e6 : undefined;
}

export interface ThreadRunClock {
  /** The calling thread's run time so far, ms (NaN when the read fails). */
  now(): number;
  close(): void;
}

/**
 * A run clock of the thread that calls this (each thread gets its own: /proc/thread-self), its file
 * kept open (one read a sample, a few µs); undefined where there is no /proc/thread-self.
 */
export function threadRunClock(): ThreadRunClock | undefined {
  let fd: number;
  try {
    fd = openSync("/proc/thread-self/schedstat", "r");
  } catch {
    return undefined;
  }
  const buf = Buffer.alloc(128);
  let open = true;
  return {
    now() {
      if (!open) return Number.NaN;
      try {
        return schedRunMs(buf.toString("latin1", 0, readSync(fd, buf, 0, buf.length, 0))) ?? Number.NaN;
      } catch {
        return Number.NaN;
      }
    },
    close() {
      if (open) closeSync(fd);
      open = false;
    },
  };
}
