/**
 * Per-phase CPU of a trajectory (metrics.jsonl `boot_cpu_s`, `agent_cpu_s`, `score_cpu_s`,
 * `runner_cpu_s`): arithmetic over readings of CPU counters, pure.
 *
 * - boot: the agent worker's CPU (its cgroup) from its start to the moment it is handed the
 *   trajectory — the core's boot (a pooled worker's idle wait included: that CPU was spent for it);
 * - agent: the same worker's CPU from then to the end of the Cline task;
 * - scoring: the scoring worker's CPU from its start to the end of the scorer;
 * - runner: the runner process's own CPU (every thread: the gateway's included), split evenly, at
 *   each moment, among the trajectories holding a concurrency slot then (see {@link RunnerCpuLedger}).
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

/** What the runner's CPU ledger holds: the last reading, who holds a slot, what each was given. */
export interface RunnerCpuState {
  /** The runner's CPU counter at the last event, s. */
  readonly lastS: number;
  /** Trajectories holding a concurrency slot now. */
  readonly active: ReadonlySet<string>;
  /** CPU seconds given to each trajectory so far. */
  readonly shares: ReadonlyMap<string, number>;
}

export function runnerCpuStart(nowS: number): RunnerCpuState {
  return { lastS: nowS, active: new Set(), shares: new Map() };
}

/** Gives the CPU used since the last event, in equal parts, to the trajectories active in between. */
export function runnerCpuSettle(s: RunnerCpuState, nowS: number): RunnerCpuState {
  const delta = Math.max(0, nowS - s.lastS);
  if (s.active.size === 0) return { ...s, lastS: nowS };
  const shares = new Map(s.shares);
  for (const id of s.active) shares.set(id, (shares.get(id) ?? 0) + delta / s.active.size);
  return { ...s, lastS: nowS, shares };
}

/** `id` takes (`true`) or gives back (`false`) a slot at `nowS`. */
export function runnerCpuHold(s: RunnerCpuState, id: string, holds: boolean, nowS: number): RunnerCpuState {
  const settled = runnerCpuSettle(s, nowS);
  const active = new Set(settled.active);
  if (holds) active.add(id);
  else active.delete(id);
  return { ...settled, active };
}

/** `id`'s share so far (undefined: it never held a slot) and the state without it. */
export function runnerCpuTake(
  s: RunnerCpuState,
  id: string,
  nowS: number,
): [number | undefined, RunnerCpuState] {
  const settled = runnerCpuSettle(s, nowS);
  const share = settled.shares.get(id);
  const shares = new Map(settled.shares);
  shares.delete(id);
  return [share === undefined ? undefined : roundCpuS(share), { ...settled, shares }];
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
  let state = runnerCpuStart(readCpuS());
  return {
    hold(id) {
      state = runnerCpuHold(state, id, true, readCpuS());
    },
    release(id) {
      state = runnerCpuHold(state, id, false, readCpuS());
    },
    take(id) {
      const [share, next] = runnerCpuTake(state, id, readCpuS());
      state = next;
      return share;
    },
  };
}
