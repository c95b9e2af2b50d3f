import { closeSync, openSync, readSync } from "node:fs";
import { schedRunMs } from "../../packages/runner/src/gateway/thread-run-clock.js";

export { schedRunMs };

/**
 * The runner's OWN event-loop delay, apart from this machine's: a 10 ms timer's lateness, each
 * sample capped by the CPU time the main thread itself ran meanwhile (its schedstat: run time and
 * runqueue wait, in ns). On a shared, overloaded machine a timer is late mostly because the thread
 * waited for a core; the loop can only have been held up by our own work for as long as it ran.
 * `min(late, ran)` is an upper bound of the own part (never less than the truth), so a target met
 * on it is met by the runner. Linux only (/proc/<pid>/task/<tid>/schedstat).
 */

/** A sample's own delay: its lateness, at most the CPU time the thread ran in the sample. Pure. */
export function ownDelayMs(lateMs: number, ranMs: number): number {
  return Math.max(0, Math.min(lateMs, ranMs));
}

export interface OwnLoopMonitor {
  /** Stops sampling; the samples' lateness (wall) and own delays, ms. */
  stop(): { wallMs: number[]; ownMs: number[] };
}

/** Samples the main thread's timer lateness every `intervalMs` (its own cost counts in the runner's CPU). */
export function startOwnLoopMonitor(intervalMs = 10): OwnLoopMonitor {
  const fd = openSync(`/proc/self/task/${process.pid}/schedstat`, "r");
  const buf = Buffer.alloc(128);
  const runMs = () => schedRunMs(buf.toString("latin1", 0, readSync(fd, buf, 0, buf.length, 0)));
  const wallMs: number[] = [];
  const ownMs: number[] = [];
  let due = performance.now() + intervalMs;
  let ranBefore = runMs() ?? 0;
  let timer: NodeJS.Timeout;
  const tick = () => {
    const now = performance.now();
    const late = Math.max(0, now - due);
    const ran = runMs() ?? ranBefore;
    wallMs.push(late);
    ownMs.push(ownDelayMs(late, ran - ranBefore));
    ranBefore = ran;
    due = now + intervalMs;
    timer = setTimeout(tick, intervalMs);
  };
  timer = setTimeout(tick, intervalMs);
  return {
    stop() {
      clearTimeout(timer);
      closeSync(fd);
      return { wallMs, ownMs };
    },
  };
}
