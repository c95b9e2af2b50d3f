/**
 * The one deadline helper of flakegym: a signal that aborts when a named time limit runs out or
 * when any of its source signals aborts.
 *
 * Why not `AbortSignal.any([signal, AbortSignal.timeout(ms)])`: on Node 20 the composite holds its
 * sources only weakly, so after a garbage collection the timeout signal (referenced by nothing
 * else) is collected and the composite never aborts — a wait meant to last seconds lasts forever.
 * A deadline keeps strong references instead: the pending timer's callback holds the controller
 * and each source holds a (strong) listener that holds it too, until `dispose()` clears the timer
 * and removes the listeners. Dispose it (`using`, or
 * try/finally) once the guarded wait is over.
 *
 * Lives in @flakegym/nomad-jobs, the lowest package that needs it (its request core), so the
 * runner imports it from there; see docs/design/ARCHITECTURE.md.
 */

/** The reason a deadline aborts with: names the limit and its value. */
export class DeadlineError extends Error {
  /** Same name as `AbortSignal.timeout`'s reason, so timeout-aware code treats both alike. */
  override readonly name = "TimeoutError";
  readonly code = "E_DEADLINE";

  constructor(
    /** What ran out, as the user knows it (a flag, an option, a config field). */
    readonly limit: string,
    /** Its value in milliseconds. */
    readonly ms: number,
  ) {
    super(`${limit} ran out (${ms} ms)`);
  }
}

/** A time limit to enforce: `ms` milliseconds, reported as `limit`. */
export interface DeadlineLimit {
  readonly ms: number;
  /** What the limit is called where the user sets it (e.g. `--atropos-wait`, `judge.timeoutMs`). */
  readonly limit: string;
}

export interface DeadlineOptions {
  /** Signals whose abort aborts the deadline (their reason is kept); undefined entries are skipped. */
  readonly signals?: readonly (AbortSignal | undefined)[];
  /** The time limit; without it the deadline only links its sources. */
  readonly timeout?: DeadlineLimit;
}

/** A signal bounded by a time limit and/or source signals; dispose it when the wait is over. */
export interface Deadline extends Disposable {
  /** Aborts with a `DeadlineError` when the time runs out, or with a source's reason. */
  readonly signal: AbortSignal;
  /** Whether this deadline's own time limit fired (not a source). */
  readonly expired: boolean;
  /** Clears the timer and removes the listeners from the sources; safe to call twice. */
  dispose(): void;
}

/** Starts a deadline. Already-aborted sources abort it at once. */
export function createDeadline(o: DeadlineOptions): Deadline {
  const controller = new AbortController();
  const sources = (o.signals ?? []).filter((s): s is AbortSignal => s !== undefined);
  let expired = false;
  let timer: NodeJS.Timeout | undefined;

  const onSourceAbort = (event: Event) => {
    const source = event.target as AbortSignal;
    finish(source.reason);
  };
  const detach = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    for (const s of sources) s.removeEventListener("abort", onSourceAbort);
  };
  const finish = (reason: unknown) => {
    detach();
    if (!controller.signal.aborted) controller.abort(reason);
  };

  const firstAborted = sources.find((s) => s.aborted);
  if (firstAborted) controller.abort(firstAborted.reason);
  else {
    for (const s of sources) s.addEventListener("abort", onSourceAbort, { once: true });
    const limit = o.timeout;
    if (limit) {
      timer = setTimeout(() => {
        expired = true;
        finish(new DeadlineError(limit.limit, limit.ms));
      }, limit.ms);
      // Like AbortSignal.timeout: a pending deadline alone does not keep the process alive.
      timer.unref();
    }
  }

  return {
    signal: controller.signal,
    get expired() {
      return expired;
    },
    dispose: detach,
    [Symbol.dispose]: detach,
  };
}
