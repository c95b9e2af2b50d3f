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
