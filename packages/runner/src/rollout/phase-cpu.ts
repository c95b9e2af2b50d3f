/**
 * Per-phase CPU of a trajectory (metrics.jsonl `boot_cpu_s`, `agent_cpu_s`, `score_cpu_s`,
 * `runner_cpu_s`): arithmetic over readings of CPU counters, pure.
 *
 * - boot: the agent worker's CPU (its cgroup) from its start to the moment it is handed the
 *   trajectory — the core's boot (a pooled worker's idle wait included: that CPU was spent for it);
 * - agent: the same worker's CPU from then to the end of the Cline task;
 * - scoring: the scoring worker's CPU from its start to the end of the scorer;
 * - runner: the runner process's own CPU (every thread: the gateway's included), split evenly, at
 *   each moment, among the trajectories holding a concurrency slot then (see {@link RunnerCpuShares}).
 */

/** CPU seconds, rounded to the millisecond (the counters' precision is finer; the noise is not). */
export function roundCpuS(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}

/**
 * The CPU used between two readings of one counter, s; undefined when either reading is missing
 * (the backend cannot measure) or the counter went backwards (not one counter: never a guess).
 */
export function cpuBetween(from: number | undefined, to: number | undefined): number | undefined {
  if (from === undefined || to === undefined || !Number.isFinite(from) || !Number.isFinite(to))
    return undefined;
  return to < from ? undefined : roundCpuS(to - from);
}

/** The boot and agent CPU of an attempt from the worker's counter at its start (0), adoption and task end. */
export function agentPhaseCpuOf(
  atAssign: number | undefined,
  atTaskEnd: number | undefined,
): { bootCpuS?: number; agentCpuS?: number } {
  const boot = cpuBetween(0, atAssign);
  const agent = cpuBetween(atAssign, atTaskEnd);
  return {
    ...(boot !== undefined ? { bootCpuS: boot } : {}),
    ...(agent !== undefined ? { agentCpuS: agent } : {}),
  };
}

/**
 * The runner's CPU split among the trajectories holding a slot: each interval between two events
 * gives its CPU in equal parts to the trajectories active in it. Every event costs O(1) whatever
 * the number of trajectories (at a thousand concurrent, a per-event pass over every share, or a
 * copy of the share map, was a quadratic cost on the runner's event loop): a running total of
 * what one slot has received since the start, and per active trajectory that total when it took
 * its slot. No effects but on itself; `nowS` is the runner's CPU counter at the event.
 */
export class RunnerCpuShares {
  /** The runner's CPU counter at the last event, s. */
  private lastS: number;
  /** CPU seconds one slot held throughout would have received since the start. */
  private perSlotS = 0;
  /** Trajectories holding a slot now: `perSlotS` when they took it (or were last taken). */
  private readonly active = new Map<string, number>();
  /** What trajectories received in slots they gave back, not yet taken. */
  private readonly banked = new Map<string, number>();

  constructor(nowS: number) {
    this.lastS = nowS;
  }

  /** Gives the CPU used since the last event to the trajectories active in between (a counter gone backwards gives 0). */
  settle(nowS: number): void {
    const delta = Math.max(0, nowS - this.lastS);
    if (this.active.size > 0) this.perSlotS += delta / this.active.size;
    this.lastS = nowS;
  }

  /** `id` takes (`true`) or gives back (`false`) a slot at `nowS`. */
  hold(id: string, holds: boolean, nowS: number): void {
    this.settle(nowS);
    const since = this.active.get(id);
    if (holds) {
      if (since === undefined) this.active.set(id, this.perSlotS);
    } else if (since !== undefined) {
      this.banked.set(id, (this.banked.get(id) ?? 0) + this.perSlotS - since);
      this.active.delete(id);
    }
  }

  /** `id`'s share so far, ms-rounded (undefined: it never held a slot), and forgets it. */
  take(id: string, nowS: number): number | undefined {
    this.settle(nowS);
    const since = this.active.get(id);
    const banked = this.banked.get(id);
    if (since === undefined && banked === undefined) return undefined;
    this.banked.delete(id);
    if (since !== undefined) this.active.set(id, this.perSlotS);
    return roundCpuS(Math.max(0, (banked ?? 0) + (since === undefined ? 0 : this.perSlotS - since)));
  }

  /** Trajectories with a share kept (active or banked): what the ledger still holds. */
  get kept(): number {
    return new Set([...this.active.keys(), ...this.banked.keys()]).size;
  }
}

/** The runner process's CPU split among trajectories (the effect: reading the process's counter). */
export interface RunnerCpuLedger {
  hold(id: string): void;
  release(id: string): void;
  /** The trajectory's share of the runner's CPU, s, and forgets it. */
  take(id: string): number | undefined;
}

/** This process's CPU (every thread), s. */
export function processCpuS(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

export function createRunnerCpuLedger(readCpuS: () => number = processCpuS): RunnerCpuLedger {
  const shares = new RunnerCpuShares(readCpuS());
  return {
    hold: (id) => shares.hold(id, true, readCpuS()),
    release: (id) => shares.hold(id, false, readCpuS()),
    take: (id) => shares.take(id, readCpuS()),
  };
}
