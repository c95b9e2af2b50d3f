/** The cost bench's options and its last line (pure). */

export const COST_PARTS = ["boot", "pss", "sandbox", "gateway", "rollout", "cli"] as const;
/** The parts the last line's four numbers come from (the rest on `--parts`). */
export const DEFAULT_PARTS: readonly CostPart[] = ["rollout", "pss", "cli"];
export type CostPart = (typeof COST_PARTS)[number];

export interface CostArgs {
  readonly parts: readonly CostPart[];
  /** Alternating boot pairs; rollout repetitions per side. */
  readonly reps: number;
  readonly pssWorkers: number;
  readonly sandboxReps: number;
  readonly gatewayCalls: number;
  /** The paced upstream's decode step, ms. */
  readonly intervalMs: number;
  /** Trajectories per rollout side, at `concurrency`. */
  readonly n: number;
  readonly concurrency: number;
  readonly task: string;
  /** `--reuse` for our side (absent: the product's default). */
  readonly reuse?: number;
  /** `flakegym --help` runs per side. */
  readonly cliReps: number;
}

const DEFAULTS: Omit<CostArgs, "parts"> = {
  reps: 3,
  pssWorkers: 4,
  sandboxReps: 30,
  gatewayCalls: 100,
  intervalMs: 5,
  n: 16,
  concurrency: 2,
  cliReps: 5,
  task: "semver-lite-caret-zero",
};

const NUMERIC: Record<string, keyof Omit<CostArgs, "parts" | "task">> = {
  "--reps": "reps",
  "--pss-workers": "pssWorkers",
  "--sandbox-reps": "sandboxReps",
  "--gateway-calls": "gatewayCalls",
  "--interval-ms": "intervalMs",
  "--n": "n",
  "--concurrency": "concurrency",
  "--reuse": "reuse",
  "--cli-reps": "cliReps",
};

/** `--flag value` pairs into options; an unknown flag, part or a bad number throws naming it. Pure. */
export function parseCostArgs(args: readonly string[]): CostArgs {
  const o: Record<string, unknown> = { ...DEFAULTS, parts: [...DEFAULT_PARTS] };
  for (let i = 0; i < args.length; i += 2) {
    const name = args[i]!;
    const value = args[i + 1];
    if (value === undefined || value.startsWith("--"))
      throw new Error(`bench cost: ${name} needs a value (see bench/cost.bench.ts)`);
    if (name === "--parts") {
      const parts = value.split(",").filter((p) => p !== "");
      const bad = parts.filter((p) => !(COST_PARTS as readonly string[]).includes(p));
      if (bad.length > 0 || parts.length === 0)
        throw new Error(
          `bench cost: --parts '${value}': unknown part(s) ${bad.join(",")}; parts: ${COST_PARTS.join(",")}`,
        );
      o["parts"] = parts;
    } else if (name === "--task") o["task"] = value;
    else if (NUMERIC[name] !== undefined) {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1)
        throw new Error(`bench cost: ${name} must be a whole number ≥ 1, got '${value}'`);
      o[NUMERIC[name]] = n;
    } else
      throw new Error(
        `bench cost: unknown flag ${name}; flags: --parts ${Object.keys(NUMERIC).join(" ")} --task`,
      );
  }
  return o as unknown as CostArgs;
}

/** The headline numbers; a part not run leaves its number out. */
export interface CostSummary {
  bootCpuRatio?: number;
  /** CPU per trajectory while the group runs (steady state), ours / bare. */
  trajCpuRatio?: number;
  /** Trajectories per core-minute over each side's whole run (warm-up and shutdown in), ours / bare. */
  trajPerCoreMinRatio?: number;
  pssMiB?: number;
  gatewayCpuRatio?: number;
  /** `flakegym --help`: CPU seconds (user + system), median. */
  cliStartS?: number;
}

const fmt = (v: number | undefined, digits: number) =>
  v === undefined || !Number.isFinite(v) ? "n/a" : v.toFixed(digits);

/** `cost: traj-cpu <ratio>x traj/core-min <ratio>x pss <MiB> MiB cli-start <s> s`. Pure. */
export function costLine(s: CostSummary): string {
  return `cost: traj-cpu ${fmt(s.trajCpuRatio, 2)}x traj/core-min ${fmt(s.trajPerCoreMinRatio, 2)}x pss ${fmt(s.pssMiB, 0)} MiB cli-start ${fmt(s.cliStartS, 2)} s`;
}

/** What one rep of the rollout part measured of a side (rollout.bench.ts `Measure`, the fields used here). */
export interface RepMeasure {
  readonly side: "no pool" | "pool" | "bare" | "cli";
  readonly rep: number;
  /** CPU of the side's whole run, s. */
  readonly cpuS: number;
  /** CPU while its group ran, s. */
  readonly groupCpuS: number;
  readonly loadBefore: string;
  readonly loadAfter: string;
}

/** One rep's ratios, ours over the bare cores measured next to it. */
export interface RepRatios {
  readonly rep: number;
  /** CPU per trajectory while the group runs: in-process (warm pool) / bare. */
  readonly trajCpu: number;
  /** Trajectories per core-minute over the whole run: the installed CLI / bare. */
  readonly perCoreMinCli: number;
  /** The same, the in-process runner / bare. */
  readonly perCoreMinInProcess: number;
  /** 1-minute load averages seen from the first of the rep's measurements to its last. */
  readonly load1: readonly number[];
}

/**
 * Each rep's ratios from that rep's own measurements (a side missing in a rep gives NaN there):
 * the shared machine's load moves between reps, so a rep is judged against the bare cores measured
 * in it, not against another rep's. Pure.
 */
export function perRepRatios(all: readonly RepMeasure[]): RepRatios[] {
  const reps = [...new Set(all.map((m) => m.rep))].sort((a, b) => a - b);
  return reps.map((rep) => {
    const of = (side: RepMeasure["side"]) => all.find((m) => m.rep === rep && m.side === side);
    const [pool, bare, cli] = [of("pool"), of("bare"), of("cli")];
    const ratio = (a: number | undefined, b: number | undefined) =>
      a === undefined || b === undefined ? Number.NaN : a / b;
    const load1 = all
      .filter((m) => m.rep === rep)
      .flatMap((m) => [m.loadBefore, m.loadAfter])
      .map((l) => Number(l.split(" ")[0]));
    return {
      rep,
      trajCpu: ratio(pool?.groupCpuS, bare?.groupCpuS),
      perCoreMinCli: ratio(bare?.cpuS, cli?.cpuS),
      perCoreMinInProcess: ratio(bare?.cpuS, pool?.cpuS),
      load1,
    };
  });
}

/**
 * The order of the rollout part's sides in rep `rep` (0-based): the installed CLI and the bare
 * cores always next to each other (the last line's traj/core-min compares them), which of the two
 * goes first alternating, the in-process runner at the outside. Pure.
 */
export function costSideOrder(rep: number): readonly ("pool" | "bare" | "cli")[] {
  return rep % 2 === 0 ? ["pool", "bare", "cli"] : ["cli", "bare", "pool"];
}

/** Goals of the rollout part (issue 47). */
export const TRAJ_CPU_GOAL = 0.5;
export const PER_CORE_MIN_GOAL = 2;

/** Lines saying each rep's ratios and whether every rep meets the goals. Pure. */
export function perRepLines(r: readonly RepRatios[]): string[] {
  const f = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)}x` : "n/a");
  const lines = r.map((x) => {
    const lo = Math.min(...x.load1);
    const hi = Math.max(...x.load1);
    return `  rep ${x.rep + 1}: traj-cpu ${f(x.trajCpu)}, traj/core-min ${f(x.perCoreMinCli)} as installed (${f(x.perCoreMinInProcess)} in-process), 1-min load ${lo.toFixed(1)}–${hi.toFixed(1)}`;
  });
  const cpuOk = r.filter((x) => x.trajCpu <= TRAJ_CPU_GOAL).length;
  const perOk = r.filter((x) => x.perCoreMinCli >= PER_CORE_MIN_GOAL).length;
  lines.push(
    `  every rep: traj-cpu ≤ ${TRAJ_CPU_GOAL}x in ${cpuOk} of ${r.length}, traj/core-min ≥ ${PER_CORE_MIN_GOAL}x (as installed) in ${perOk} of ${r.length}`,
  );
  return lines;
}
