import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir, readdir } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import { type ClineCore, type LaunchOptions, launchClineCore } from "@flakegym/cline-vendor";

/** Shared helpers for `npm run bench -- <name>`: stats, a table, and the JSON result file. */

export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx]!;
}

export const median = (values: readonly number[]) => percentile(values, 50);

/** Prints rows as an aligned table. */
export function printTable(rows: readonly Record<string, string | number>[]): void {
  if (rows.length === 0) return;
  const cols = Object.keys(rows[0]!);
  const fmt = (v: string | number) =>
    typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(2)) : v;
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => fmt(r[c] ?? "").length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i]!)).join("  ");
  console.log(line(cols));
  console.log(line(widths.map((w) => "-".repeat(w))));
  for (const r of rows) console.log(line(cols.map((c) => fmt(r[c] ?? ""))));
}

/** Context handed to each benchmark: where to write results. */
export interface BenchContext {
  readonly outDir: string;
  /** Writes `<outDir>/<name>.json` and prints its path. */
  writeResult(name: string, data: unknown): string;
}

export function createBenchContext(benchName: string, root: string): BenchContext {
  const stamp = new Date().toISOString().replace(/[:.]/g, "-");
  const outDir = join(root, "bench", "out", `${benchName}-${stamp}`);
  mkdirSync(outDir, { recursive: true });
  return {
    outDir,
    writeResult(name, data) {
      const file = join(outDir, `${name}.json`);
      writeFileSync(file, `${JSON.stringify(data, null, 2)}\n`);
      console.log(`\nresults: ${file}`);
      return file;
    },
  };
}

/**
 * A bare Cline core (its supervisor, cline-host, cline-core; no sandbox, no worker) on an empty
 * workspace `dir/ws`, config and HOME under `dir`: the baseline several benchmarks boot.
 */
export async function launchBareCore(dir: string, extra: Partial<LaunchOptions> = {}): Promise<ClineCore> {
  await mkdir(join(dir, "ws"), { recursive: true });
  return await launchClineCore({
    workspace: join(dir, "ws"),
    configDir: join(dir, "cfg"),
    home: join(dir, "home"),
    startTimeoutMs: 180_000,
    ...extra,
  });
}

/** The load average (1/5/15 min), as every benchmark prints it beside its measurements. */
export function loadStr(): string {
  return loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
}

/**
 * CPU seconds of processes from /proc/<pid>/stat: user + system of each, plus what its reaped
 * children used (cutime + cstime); a process that is gone counts 0.
 */
export function procCpuSeconds(pids: readonly (number | "self")[]): number {
  let ticks = 0;
  for (const pid of pids) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    ticks += [11, 12, 13, 14].reduce((a, i) => a + Number(f[i]), 0);
  }
  return ticks / CLOCK_TICKS;
}

/** USER_HZ: /proc's unit of CPU time (100 on every Linux architecture Node runs on). */
const CLOCK_TICKS = 100;

/** `--name value` / `--name=value` readers for one benchmark's flags; errors name the bench and flag. */
export function benchFlags(bench: string, args: readonly string[]) {
  const flag = (name: string, def: string): string => {
    const inline = args.find((a) => a.startsWith(`--${name}=`));
    if (inline) return inline.slice(name.length + 3);
    const i = args.indexOf(`--${name}`);
    if (i < 0) return def;
    const v = args[i + 1];
    if (v === undefined || v.startsWith("--")) throw new Error(`bench ${bench}: --${name} needs a value`);
    return v;
  };
  const num = (name: string, def: number): number => {
    const v = Number(flag(name, String(def)));
    if (!Number.isFinite(v) || v < 0) throw new Error(`bench ${bench}: --${name} must be a number ≥ 0`);
    return v;
  };
  return { flag, num };
}

/** `reps` runs each of ours and the baseline, alternating which goes first, after one warm-up run of ours. */
export async function alternating<T>(
  reps: number,
  ours: () => Promise<T>,
  base: () => Promise<T>,
): Promise<{ ours: T[]; base: T[] }> {
  const out = { ours: [] as T[], base: [] as T[] };
  await ours(); // warm caches before measuring
  for (let i = 0; i < reps; i++) {
    if (i % 2 === 0) {
      out.ours.push(await ours());
      out.base.push(await base());
    } else {
      out.base.push(await base());
      out.ours.push(await ours());
    }
  }
  return out;
}

/** Every file named `name` below `dir` (a missing dir: none). */
export async function findFiles(dir: string, name: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await findFiles(p, name)));
    else if (e.name === name) out.push(p);
  }
  return out;
}
