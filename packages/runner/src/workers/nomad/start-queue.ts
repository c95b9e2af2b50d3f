import { createDeadline } from "@flakegym/nomad-jobs";
import { createSemaphore } from "../semaphore.js";
import { NomadWorkerError } from "./errors.js";

/**
 * The Nomad backend's start queue: at most `maxConcurrentStarts` worker starts talk to Nomad at
 * once (register, dispatch, follow to running, probe the core); the others wait their turn, first
 * come first served. A thousand trajectories starting at once otherwise send a thousand dispatches
 * and a thousand blocking queries in the same second, and their calls time out behind each other.
 *
 * A start's own deadline (`startTimeoutMs`) begins when it is admitted, so time spent queued
 * behind this runner's own starts never makes a start time out. The wait in the queue is bounded
 * as well (startQueueBoundMs): every start ahead finishes within its own bound.
 */

/** What one admitted start may take at most: its deadline, its parent's registration and its cleanup. */
export function startBoundMs(o: {
  readonly startTimeoutMs: number;
  readonly cleanupTimeoutMs: number;
}): number {
  // parent registration (≤ 60 s), the start itself, then a resent dispatch, a purge and a release
  return Math.min(o.startTimeoutMs, 60_000) + o.startTimeoutMs + 3 * o.cleanupTimeoutMs;
}

/**
 * The longest a start queued behind `ahead` others waits for a slot, `slots` running at once, each
 * done within `perStartMs`: the rounds of starts ahead of it, plus the one running now. Pure.
 */
export function startQueueBoundMs(ahead: number, slots: number, perStartMs: number): number {
  return (Math.floor(ahead / Math.max(1, slots)) + 1) * perStartMs;
}

export interface StartQueue {
  /** Runs `fn` once admitted; the wait is bounded and ends with `signal`. */
  run<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T>;
  /** Starts waiting now (for progress and tests). */
  readonly waiting: number;
}

export function createStartQueue(slots: number, perStartMs: number): StartQueue {
  const sem = createSemaphore(slots);
  return {
    async run(signal, fn) {
      const boundMs = startQueueBoundMs(sem.waiting, slots, perStartMs);
      {
        using wait = createDeadline({
          signals: [signal],
          timeout: { ms: boundMs, limit: "the Nomad backend's start queue (maxConcurrentStarts)" },
        });
        try {
          await sem.acquire(wait.signal);
        } catch (err) {
          if (!wait.expired) throw err;
          throw new NomadWorkerError(
            "E_NOMAD_START_QUEUE",
            `a worker start waited ${boundMs} ms for one of the ${slots} start slots without getting one`,
            {
              hint: "the starts ahead of it outlived their own bounds: check the Nomad servers' health, or raise maxConcurrentStarts",
            },
          );
        }
      }
      try {
        return await fn();
      } finally {
        sem.release();
      }
    },
    get waiting() {
      return sem.waiting;
    },
  };
}
