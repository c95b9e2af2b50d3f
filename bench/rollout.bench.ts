/**
 * `npm run bench -- rollout [--n 8] [--concurrency 2] [--task <id>] [--pool <size>] [--reps 2]`:
 * one group of N scripted trajectories end to end through flakegym (snapshot cached, forks,
 * sandboxed workers, gateway, scoring in fresh forks, outputs), three ways, in the same process run:
 *
 * - **no pool**: every core boots on its trajectory's critical path. Goal: ≤ 1.3× bare.
 * - **pool**: the warm pool (`--pool`, default the concurrency, as `rollout`/`eval` default it),
 *   warmed before the group starts, as a long run (an eval's later tasks, serve) sees it. Goal:
 *   ≤ 0.6× bare.
 * - **bare**: N bare cline-core runs of the same turns (no sandbox, no gateway, no scoring: a plain
 *   copy of the workspace, the core, a scripted OpenAI server), same concurrency.
 *
 * `--reps` repetitions, the sides' order rotating each repetition so that all three see the same
 * load; the load average is printed with every measurement, ratios are of the medians.
 *
 * Trajectories per core-minute, pool vs no pool vs bare: the CPU of the bench process and every
 * process it started — sandboxed workers and scorers included — read from a cgroup of the run's
 * own (bench/run-cgroup.ts), over each side's whole run (the pool's warm-up boots included).
 */

import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  createClineClient,
  launchClineCore,
  probeOneByteCore,
  resolveClinePackage,
  runClineTask,
  type ScriptedTurn,
  startScriptedOpenAiServer,
  xmlTool,
} from "@flakegym/cline-vendor";
import { execa } from "execa";
import { flakegymCacheRoot } from "../packages/runner/src/cache-root.mjs";
import type { RolloutDeps } from "../packages/runner/src/rollout/deps.js";
import { runRollout } from "../packages/runner/src/rollout/run-rollout.js";
import { createRolloutDeps } from "../packages/runner/src/rollout/wire.js";
import type { RunConfig } from "../packages/runner/src/run-format/schema.js";
import { buildSnapshot } from "../packages/runner/src/snapshots/build.js";
import type { Snapshot } from "../packages/runner/src/snapshots/manifest.js";
import { snapshotSpecOfTask } from "../packages/runner/src/snapshots/spec.js";
import { loadTask } from "../packages/runner/src/tasks/catalog.js";
import type { PoolState } from "../packages/runner/src/workers/pool/types.js";
import { createSemaphore } from "../packages/runner/src/workers/semaphore.js";
import { type BenchContext, loadStr, median, printTable, procCpuSeconds } from "./lib.js";
import { openRunCgroup } from "./run-cgroup.js";

function flag(args: string[], name: string, dflt: string): string {
  const i = args.indexOf(`--${name}`);
  return i !== -1 && args[i + 1] ? args[i + 1]! : dflt;
}

const load = loadStr;

/** The scripted turns both sides replay: look at the code, write a file, finish. */
function turns(): ScriptedTurn[] {
  return [
    { text: `Let me look at the project.\n${xmlTool.executeCommand("ls src")}` },
    { text: `I'll add a note.\n${xmlTool.writeToFile("NOTES.md", "# notes\n\nbenchmark run\n")}` },
    { text: xmlTool.attemptCompletion("added NOTES.md") },
  ];
}

/** `cli`: the installed `flakegym rollout` (its bundle, a child process) with the warm pool, as users run it. */
export type Side = "no pool" | "pool" | "bare" | "cli";

/** One side's measurement. */
export interface Measure {
  readonly side: Side;
  readonly rep: number;
  /** The group's wall time (the pool's warm-up before it is not in it). */
  readonly ms: number;
  /** CPU of the whole side's run (warm-up, group, shutdown), s. */
  readonly cpuS: number;
  /** Of which the bench process itself (the runner, its gateway thread), s. */
  readonly selfCpuS: number;
  /** CPU during the group's wall time only, s. */
  readonly groupCpuS: number;
  /** CPU of the sandboxed agent workers (their boots included) and of the scorers, s (sampled). */
  readonly agentsCpuS?: number;
  readonly scorersCpuS?: number;
  /** Each worker group's CPU, s (the JSON result only). */
  readonly groups?: Record<string, number>;
  readonly completed: number;
  readonly pooled: number;
  /** Per trajectory: boot, agent, fork, score ms. */
  readonly phases: readonly Record<string, number>[];
  readonly loadBefore: string;
  readonly loadAfter: string;
  /** Pool workers booted and never used (retired) during the side's run. */
  readonly retired?: number;
}

const selfCpuS = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

/** Resolves when `pred` holds on the pool's state, or after `ms` (bounded; says so). */
function poolReady(
  subscribe: (f: (s: PoolState) => void) => void,
  pred: (s: PoolState) => boolean,
  ms: number,
): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    subscribe((s) => {
      if (pred(s)) {
        clearTimeout(timer);
        resolve(true);
      }
    });
  });
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const concurrency = Number(flag(args, "concurrency", "2"));
  const o: RolloutBenchOptions = {
    n: Number(flag(args, "n", "8")),
    concurrency,
    taskId: flag(args, "task", "semver-lite-caret-zero"),
    poolSize: Number(flag(args, "pool", String(concurrency))),
    reps: Number(flag(args, "reps", "2")),
    ...(args.includes("--reuse") ? { reuse: Number(flag(args, "reuse", "1")) } : {}),
  };
  const { all, counted } = await measureRolloutSides(o, ["no pool", "pool", "bare"]);
  report(ctx, all, { ...o, counted });
}

/** What the rollout bench runs: N trajectories of a task at a concurrency, `reps` times per side. */
export interface RolloutBenchOptions {
  readonly n: number;
  readonly concurrency: number;
  readonly taskId: string;
  readonly poolSize: number;
  readonly reps: number;
  /** `--reuse`: trajectories one pooled worker serves (absent: the product's default). */
  readonly reuse?: number;
}

/**
 * Each of `sides` measured `reps` times, their order rotating each repetition (or as `orderOf` says), with the CPU of the
 * bench process and everything it started (`counted` says how it was counted). Also used by the
 * cost bench (trajectories per core-minute).
 */
export async function measureRolloutSides(
  o: RolloutBenchOptions,
  sides: readonly Side[],
  orderOf: (rep: number) => readonly Side[] = (rep) => sides.map((_, i) => sides[(i + rep) % sides.length]!),
): Promise<{ all: Measure[]; counted: string }> {
  const { n, concurrency, taskId, poolSize, reps, reuse } = o;
  const scratch = await mkdtemp(join(tmpdir(), "flakegym-bench-rollout-"));
  const signal = new AbortController().signal;
  const cg = await openRunCgroup(`flakegym-bench-rollout-${process.pid}`);
  const counted =
    "reason" in cg
      ? `this process and its reaped children only (/proc/self/stat): sandboxed workers are NOT counted (${cg.reason})`
      : "this process and everything it started (its own cpuacct cgroup: sandboxed workers and scorers included)";
  const cpuNow = async () => ("reason" in cg ? procCpuSeconds(["self"]) : await cg.cpuSeconds());
  try {
    const task = await loadTask(taskId);
    console.log(
      `bench rollout: ${new Date().toISOString()}, ${n} scripted trajectories of ${taskId}, concurrency ${concurrency}, pool ${poolSize}, ${reps} reps, load ${load()}`,
    );
    const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { signal });
    console.log(`snapshot ${snapshot.key.slice(0, 12)} (${snapshot.cached ? "cached" : "built"})`);
    const plan = join(scratch, "plan.json");
    await writeFile(plan, JSON.stringify({ version: 1, turns: turns() }));
    const config: RunConfig = {
      tasks: [taskId],
      groupSize: n,
      policies: [`scripted:${plan}`],
      concurrency,
      maxInfraRetries: 0,
      seed: 0,
      partialCredit: "none",
      weights: { tests: 1, build: 0, lint: 0, judge: 0 },
      testRepeat: 1,
      segments: "last",
      backend: "local",
      limits: { maxTurns: 20, timeoutMs: 300_000, testTimeoutMs: 120_000 },
    };

    let runs = 0;
    await warmProcess(config, signal);
    /** ours: the whole pipeline (the snapshot is cached now, as in any run after the first). */
    const runOurs = async (side: "no pool" | "pool", rep: number): Promise<Measure> => {
      const out = join(scratch, `run-${++runs}`);
      const listeners: ((s: PoolState) => void)[] = [];
      let last: PoolState | undefined;
      const cpu0 = await cpuNow();
      const self0 = selfCpuS();
      // each reading costs the bench process CPU that only this side is charged: once a second
      const sampler = "reason" in cg ? undefined : cg.sampleWorkers(1000);
      const deps = await createRolloutDeps(config, {
        runId: `bench-${runs}`,
        signal,
        env: process.env,
        onNote: (m) => console.log(`  ${m}`),
        ...(side === "pool"
          ? {
              pool: { size: poolSize, idleMs: 600_000, ...(reuse !== undefined ? { reuse } : {}) },
              onPool: (s: PoolState) => {
                last = s;
                for (const f of listeners) f(s);
              },
            }
          : {}),
      });
      let group: RolloutDeps = deps;
      if (side === "pool") {
        // warm before the group, as a long run has it: the group's trajectories are announced
        // here (the pool boots no more workers than they need), not again when the group starts
        const t = await deps.loadTask(taskId, signal);
        await deps.snapshot(t, signal, () => {}, n);
        const want = Math.min(poolSize, n);
        const ok = await poolReady(
          (f) => listeners.push(f),
          (s) => s.idle >= want && s.booting === 0,
          180_000,
        );
        if (!ok)
          console.log(`  pool not warm after 180 s (state ${JSON.stringify(last)}); the group starts anyway`);
        group = { ...deps, snapshot: (tk, sg, pr) => deps.snapshot(tk, sg, pr, 0) };
      }
      const loadBefore = load();
      const groupCpu0 = await cpuNow();
      const t0 = performance.now();
      let result: Awaited<ReturnType<typeof runRollout>>;
      let ms: number;
      let groupCpuS: number;
      try {
        result = await runRollout({
          out,
          resume: false,
          config,
          runId: `bench-${runs}`,
          deps: group,
          progress: () => {},
          signal,
        });
        ms = performance.now() - t0;
        groupCpuS = (await cpuNow()) - groupCpu0;
      } finally {
        await deps.close(); // the pool's idle workers stop here: their CPU counts too
      }
      const groups = [...(sampler?.stop() ?? new Map<string, number>())];
      const sum = (xs: [string, number][]) => xs.reduce((a, [, v]) => a + v, 0);
      const scorers = groups.filter(([name]) => /-score-[0-9a-f]{6}$/.test(name));
      const metrics = (await readFile(join(out, "metrics.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, number | boolean>);
      return {
        side,
        rep,
        ms,
        cpuS: (await cpuNow()) - cpu0,
        selfCpuS: selfCpuS() - self0,
        groupCpuS,
        ...(sampler
          ? {
              agentsCpuS: sum(groups) - sum(scorers),
              scorersCpuS: sum(scorers),
              groups: Object.fromEntries(groups),
            }
          : {}),
        completed: result.summary.trajectories.outcomes.completed,
        pooled: metrics.filter((m) => m.pooled_worker === true).length,
        phases: metrics.map((m) => ({
          boot: Number(m.boot_ms ?? 0),
          agent: Number(m.agent_ms ?? 0),
          fork: Number(m.fork_ms ?? 0),
          score: Number(m.score_ms ?? 0),
        })),
        loadBefore,
        loadAfter: load(),
        ...(last ? { retired: last.retired } : {}),
      };
    };

    const runBare = async (rep: number): Promise<Measure> => {
      const sem = createSemaphore(concurrency);
      const phases: Record<string, number>[] = [];
      let completed = 0;
      const cpu0 = await cpuNow();
      const self0 = selfCpuS();
      const loadBefore = load();
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: n }, (_, i) =>
          sem.with(signal, async () => {
            const r = await bareRun(join(scratch, `bare-${rep}-${i}`), snapshot, task.spec.prompt);
            phases.push({ boot: r.bootMs, agent: r.agentMs, fork: 0, score: 0 });
            if (r.outcome === "completed") completed++;
          }),
        ),
      );
      const ms = performance.now() - t0;
      const cpuS = (await cpuNow()) - cpu0;
      return {
        side: "bare",
        rep,
        ms,
        cpuS,
        groupCpuS: cpuS,
        selfCpuS: selfCpuS() - self0,
        completed,
        pooled: 0,
        phases,
        loadBefore,
        loadAfter: load(),
      };
    };

    const all: Measure[] = [];
    for (let rep = 0; rep < reps; rep++) {
      for (const side of orderOf(rep)) {
        console.log(`rep ${rep + 1}/${reps}: ${side} (load ${load()})`);
        const m =
          side === "bare"
            ? await runBare(rep)
            : side === "cli"
              ? await runInstalledCli({ o, rep, plan, out: join(scratch, `cli-${rep}`), cpuNow, cg })
              : await runOurs(side, rep);
        all.push(m);
        console.log(
          `  ${(m.ms / 1000).toFixed(1)} s, ${m.completed}/${n} completed, cpu ${m.cpuS.toFixed(1)} s (this process ${m.selfCpuS.toFixed(1)} s)` +
            `${side === "pool" ? `, ${m.pooled}/${n} on pooled workers, ${m.retired ?? 0} pooled workers never used` : ""}`,
        );
      }
    }
    return { all, counted };
  } finally {
    if (!("reason" in cg)) {
      const left = await cg.close();
      if (left) console.log(left);
    }
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * What this process pays once, whichever side runs first, before any side is measured: the gRPC
 * client's descriptor set, the core bundle's hash, the modules a run loads lazily (a rollout's deps
 * made and closed). A long run pays them once too; a side measured first would carry them alone.
 */
async function warmProcess(config: RunConfig, signal: AbortSignal): Promise<void> {
  createClineClient({ address: "unix:/nonexistent/flakegym-bench-warm.sock" }).close();
  probeOneByteCore(resolveClinePackage(), flakegymCacheRoot(process.env));
  const deps = await createRolloutDeps(config, { runId: "bench-warm", signal, env: process.env });
  await deps.close();
}

/**
 * The `cli` side: `flakegym rollout` as installed (bin/flakegym.js: the CLI's bundle, not the sources
 * through tsx) in a child process of this one, so in the run's cgroup with everything it starts.
 * Same task, turns, group, concurrency, pool and `--reuse`; the pool boots as the run starts (the CLI
 * has no warm-up before its group), so only its whole run's CPU is comparable.
 */
async function runInstalledCli(c: {
  readonly o: RolloutBenchOptions;
  readonly rep: number;
  readonly plan: string;
  readonly out: string;
  readonly cpuNow: () => Promise<number>;
  readonly cg: Awaited<ReturnType<typeof openRunCgroup>>;
}): Promise<Measure> {
  const { o } = c;
  const bin = fileURLToPath(new URL("../packages/runner/bin/flakegym.js", import.meta.url));
  const args = [
    ...["rollout", "--task", o.taskId, "--group-size", String(o.n), "--policy", `scripted:${c.plan}`],
    ...["--concurrency", String(o.concurrency), "--pool", String(o.poolSize), "--max-infra-retries", "0"],
    ...["--seed", "0", "--out", c.out, ...(o.reuse !== undefined ? ["--reuse", String(o.reuse)] : [])],
  ];
  const sampler = "reason" in c.cg ? undefined : c.cg.sampleWorkers(1000);
  const [cpu0, loadBefore, t0] = [await c.cpuNow(), load(), performance.now()];
  const { FLAKEGYM_FROM_SOURCE: _, ...env } = process.env;
  const r = await execa(process.execPath, [bin, ...args], {
    env,
    extendEnv: false,
    reject: false,
    timeout: 1_800_000,
  });
  const ms = performance.now() - t0;
  const cpuS = (await c.cpuNow()) - cpu0;
  const groups = [...(sampler?.stop() ?? new Map<string, number>())];
  if (r.exitCode !== 0)
    throw new Error(
      `bench: flakegym ${args.join(" ")} exited ${r.exitCode}: ${(r.stderr || r.stdout).slice(-2000)}`,
    );
  const summary = JSON.parse(await readFile(join(c.out, "summary.json"), "utf8")) as {
    trajectories: { outcomes: { completed: number } };
  };
  const metrics = (await readFile(join(c.out, "metrics.jsonl"), "utf8")).trim().split("\n");
  const sum = (xs: [string, number][]) => xs.reduce((a, [, v]) => a + v, 0);
  const scorers = groups.filter(([name]) => /-score-[0-9a-f]{6}$/.test(name));
  return {
    side: "cli",
    rep: c.rep,
    ms,
    cpuS,
    groupCpuS: cpuS,
    // the CLI's own process (runner, gateway): what its workers' and scorers' groups did not use
    selfCpuS: sampler ? cpuS - sum(groups) : Number.NaN,
    ...(sampler ? { agentsCpuS: sum(groups) - sum(scorers), scorersCpuS: sum(scorers) } : {}),
    completed: summary.trajectories.outcomes.completed,
    pooled: metrics.filter((l) => (JSON.parse(l) as { pooled_worker?: boolean }).pooled_worker === true)
      .length,
    phases: [],
    loadBefore,
    loadAfter: load(),
  };
}

/** A copy of the workspace, the core unsandboxed, a scripted server of its own. */
async function bareRun(dir: string, snapshot: Snapshot, prompt: string) {
  const workspace = join(dir, "workspace");
  await mkdir(dir, { recursive: true });
  await cp(snapshot.workspace, workspace, { recursive: true });
  const server = await startScriptedOpenAiServer({ turns: turns() });
  const tb = performance.now();
  const core = await launchClineCore({ workspace, configDir: join(dir, "config"), home: join(dir, "home") });
  const bootMs = performance.now() - tb;
  try {
    const run = await runClineTask({
      client: core.client,
      prompt,
      provider: { kind: "openai", baseUrl: server.baseUrl, modelId: "flakegym-scripted" },
      limits: { wallClockMs: 300_000, maxModelRequests: 20 },
    });
    return { bootMs, agentMs: run.timings.totalMs, outcome: run.outcome.kind };
  } finally {
    await core.stop();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  }
}

function report(
  ctx: BenchContext,
  all: readonly Measure[],
  o: { n: number; concurrency: number; taskId: string; poolSize: number; reps: number; counted: string },
) {
  const of = (side: Side) => all.filter((m) => m.side === side);
  const med = (side: Side, f: (m: Measure) => number) => median(of(side).map(f));
  const phase = (side: Side, k: string) => median(of(side).flatMap((m) => m.phases.map((p) => p[k] ?? 0)));
  const rows = (["no pool", "pool", "bare"] as const).map((side) => ({
    what:
      side === "bare"
        ? `bare cline-core × ${o.n}`
        : `flakegym, ${side === "pool" ? `pool ${o.poolSize} (warm)` : "no pool"}`,
    "wall s (med)": med(side, (m) => m.ms) / 1000,
    "wall s (each rep)": of(side)
      .map((m) => (m.ms / 1000).toFixed(1))
      .join(" "),
    completed: of(side)
      .map((m) => `${m.completed}/${o.n}`)
      .join(" "),
    "boot ms": phase(side, "boot"),
    "agent ms": phase(side, "agent"),
    "fork ms": phase(side, "fork"),
    "score ms": phase(side, "score"),
    "cpu s (med)": med(side, (m) => m.cpuS),
    "of which runner s": med(side, (m) => m.selfCpuS),
    "agents s":
      side === "bare" ? med(side, (m) => m.cpuS - m.selfCpuS) : med(side, (m) => m.agentsCpuS ?? Number.NaN),
    "scorers s": side === "bare" ? 0 : med(side, (m) => m.scorersCpuS ?? Number.NaN),
    "traj/core-min": o.n / (med(side, (m) => m.cpuS) / 60),
    "cpu busy": `${(med(side, (m) => m.groupCpuS / (m.ms / 1000) / availableParallelism()) * 100).toFixed(0)} %`,
  }));
  console.log(
    `\nmedians of ${o.reps} reps${o.reps % 2 === 0 ? " (of an even count: the lower middle one)" : ""}; phases: per trajectory, over every rep`,
  );
  printTable(rows);
  console.log(`\nloads (1/5/15-min) before → after each measurement:`);
  for (const m of all)
    console.log(`  rep ${m.rep + 1} ${m.side.padEnd(7)}  ${m.loadBefore} → ${m.loadAfter}`);
  const bare = med("bare", (m) => m.ms);
  const ratio = med("no pool", (m) => m.ms) / bare;
  const poolRatio = med("pool", (m) => m.ms) / bare;
  const perRep = (side: Side) =>
    all
      .filter((m) => m.side === side)
      .map((m) => (m.ms / all.find((b) => b.side === "bare" && b.rep === m.rep)!.ms).toFixed(2))
      .join(" ");
  console.log(`\nratio ours / bare: ${ratio.toFixed(2)}× (goal ≤ 1.30×; each rep ${perRep("no pool")})`);
  console.log(
    `ratio ours with the warm pool / bare: ${poolRatio.toFixed(2)}× (goal ≤ 0.60×; each rep ${perRep("pool")}; ` +
      `${of("pool")
        .map((m) => `${m.pooled}/${o.n}`)
        .join(" ")} on pooled workers)`,
  );
  console.log(
    `\ntrajectories per core-minute: pool ${rows[1]!["traj/core-min"].toFixed(2)} vs no pool ${rows[0]!["traj/core-min"].toFixed(2)} ` +
      `(${(rows[1]!["traj/core-min"] / rows[0]!["traj/core-min"]).toFixed(2)}×) vs bare ${rows[2]!["traj/core-min"].toFixed(2)}`,
  );
  console.log(
    `CPU counted: ${o.counted}; each side's whole run (the pool's warm-up boots and shutdown included).`,
  );
  console.log(
    `"cpu busy": the run's CPU during the group over (wall × ${availableParallelism()} cores); near 100 % the group is CPU-bound here.`,
  );
  ctx.writeResult("rollout", { ...o, ratio, poolRatio, rows, measures: all });
}
