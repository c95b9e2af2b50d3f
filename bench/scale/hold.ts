/**
 * The scale bench's hold: every simulated agent, once its first model call is answered, waits in
 * its first tool step until all N agents of the point have answered theirs (or ended before), so
 * that N trajectories are in their agent loop at one instant whatever pace the start queue keeps.
 * Then each goes on after a random phase within one turn's period (`spreadMs`), as agents that have
 * been running a while would, not all at once. Bounded: past `timeoutMs` the held agents go on and
 * the hold says it timed out (the bench's overlap check then fails on its own figure).
 */

/** What the hold saw: the count it waited for, who arrived, who ended before, when and how it opened. */
export interface HoldStats {
  readonly expected: number;
  arrived: number;
  gone: number;
  /** ms from the hold's creation to its opening; undefined while closed. */
  openedAfterMs: number | undefined;
  timedOut: boolean;
}

/** Whether the hold opens: every expected agent arrived or ended before arriving. Pure. */
export function holdOpens(arrived: number, gone: number, expected: number): boolean {
  return arrived + gone >= expected;
}

/** A random phase within one turn's period, ms: where a released agent resumes. Pure given `random`. */
export function releasePhaseMs(spreadMs: number, random: () => number): number {
  return Math.max(0, spreadMs) * random();
}

export class AgentHold {
  readonly stats: HoldStats;
  private readonly waiting = new Set<() => void>();
  private readonly t0 = performance.now();
  private readonly timer: NodeJS.Timeout;

  constructor(
    expected: number,
    timeoutMs: number,
    private readonly spreadMs: number,
  ) {
    this.stats = { expected, arrived: 0, gone: 0, openedAfterMs: undefined, timedOut: false };
    this.timer = setTimeout(() => this.open(true), timeoutMs);
    this.timer.unref();
    if (expected <= 0) this.open(false);
  }

  /**
   * An agent answered its first call: resolves once the hold is open and this agent's release
   * phase has passed, or at once when `signal` aborts (the core was stopped).
   */
  async arrive(signal: AbortSignal): Promise<void> {
    this.stats.arrived++;
    if (holdOpens(this.stats.arrived, this.stats.gone, this.stats.expected)) this.open(false);
    if (this.stats.openedAfterMs === undefined) await this.opened(signal);
    if (signal.aborted) return;
    await sleepUnless(releasePhaseMs(this.spreadMs, Math.random), signal);
  }

  /** An agent ended (its core stopped) before it arrived: the hold no longer waits for it. */
  leave(): void {
    this.stats.gone++;
    if (holdOpens(this.stats.arrived, this.stats.gone, this.stats.expected)) this.open(false);
  }

  private opened(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.waiting.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.waiting.add(done);
      signal.addEventListener("abort", done, { once: true });
    });
  }

  private open(timedOut: boolean): void {
    if (this.stats.openedAfterMs !== undefined) return;
    clearTimeout(this.timer);
    this.stats.openedAfterMs = performance.now() - this.t0;
    this.stats.timedOut = timedOut;
    for (const w of [...this.waiting]) w();
  }
}

function sleepUnless(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
