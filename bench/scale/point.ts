import { readdir, readFile } from "node:fs/promises";
import { loadavg } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createNomadClient } from "@flakegym/nomad-jobs";
import { threadRunClock } from "../../packages/runner/src/gateway/thread-run-clock.js";
import type { ScoreInput } from "../../packages/runner/src/rollout/deps.js";
import { runRollout } from "../../packages/runner/src/rollout/run-rollout.js";
import { createRolloutDeps } from "../../packages/runner/src/rollout/wire.js";
import type { RunConfig } from "../../packages/runner/src/run-format/schema.js";
import type { Score } from "../../packages/runner/src/run-format/score.js";
import { createNomadBackend } from "../../packages/runner/src/workers/nomad/backend.js";
import { findFiles, percentile } from "../lib.js";
import { describePolicy, type HarnessPriority, harnessLauncher, hasTool } from "./harness-priority.js";
import { type PointResult, peakOverlap } from "./judge.js";
import { startOwnLoopMonitor } from "./own-loop.js";
import {
  ask,
  type ClusterStats,
  freePortOn,
  openFds,
  routableAddress,
  startCluster,
  startLoopProbe,
  startUpstream,
} from "./processes.js";
import { threadCpuSplit, threadTicks } from "./thread-cpu.js";

/**
 * One concurrency point of `npm run bench -- scale`: N trajectories at once through the real
 * runner (runRollout + createRolloutDeps: snapshot forks, the gateway thread, the run directory's
 * writers) on the real Nomad backend and client against the Nomad double in a child process whose
 * allocations are simulated workers (sim-core.ts). Scoring is simulated too (see simulatedScore).
 */

export interface PointOptions {
  readonly n: number;
  readonly root: string;
  readonly taskId: string;
  readonly turns: number;
  readonly thinkMs: number;
  readonly intervalMs: number;
  readonly toolMs: number;
  /** The snapshot's work tree: the Nomad backend's shared snapshotDir (so no fork per trajectory). */
  readonly snapshotDir: string;
  /** The backend's maxConcurrentStarts (undefined: its default). */
  readonly maxStarts: number | undefined;
  /** The CPU priority of the harness processes (cluster, upstream): harness-priority.ts. */
  readonly harnessPriority: HarnessPriority;
  /**
   * The Nomad client's deadline per call, ms: the Nomad double runs in the harness, below every
   * other process of the machine, and answers late when the machine is busy.
   */
  readonly nomadTimeoutMs: number;
  /** The hold's bound, ms (hold.ts): how long the first agents wait for the last to answer a call. */
  readonly holdMs: number;
  /** Where the cluster process writes its CPU profile (--harness-cpu-prof-dir), or "" for none. */
  readonly harnessProfDir: string;
}

/** No hidden tests run: a fixed score after a scoring worker's typical control-plane time. */
async function simulatedScore(diff: string, signal: AbortSignal): Promise<Score> {
  await new Promise((r) => setTimeout(r, 50));
  signal.throwIfAborted();
  return {
    reward: 1,
    terms: [{ name: "tests", weight: 1, value: 1 }],
    flaky: [],
    touchedTestFiles: [],
    diffBytes: diff.length,
    durationMs: 50,
  };
}

/** The most common reasons trajectories did not complete ("kind: detail" × count), most first. */
async function failureReasons(out: string): Promise<string[]> {
  const counts = new Map<string, number>();
  for (const file of await findFiles(out, "result.json")) {
    const o = (JSON.parse(await readFile(file, "utf8")) as { outcome?: { kind: string; detail?: string } })
      .outcome;
    if (!o || o.kind === "completed") continue;
    const d = (o.detail ?? "").replace(/[0-9a-f]{8,}|\d+/g, "#").replace(/\s+/g, " ");
    // the head names what failed, the tail why (task events, stderr)
    const key = `${o.kind}: ${d.length > 320 ? `${d.slice(0, 120)} … ${d.slice(-200)}` : d}`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return [...counts]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 5)
    .map(([k, v]) => `${v}× ${k}`);
}

/**
 * Per call: the gateway's own time (its turn log's `latency.gatewayMs`: the call's time less its
 * waits on the upstream, timestamped inside the gateway) and, end to end, the turn's total less the
 * upstream's own serving time (which also counts this machine's scheduling delays); per trajectory
 * the time to its first call.
 */
async function turnStats(out: string, calls: Map<number, number>, t0Epoch: number) {
  const own: number[] = [];
  const ownRun: number[] = [];
  const endToEnd: number[] = [];
  const firstCall: number[] = [];
  const inLoop: [number, number][] = [];
  for (const file of await findFiles(out, "turns.jsonl")) {
    let first = Number.POSITIVE_INFINITY;
    let last = Number.NEGATIVE_INFINITY;
    for (const line of (await readFile(file, "utf8")).split("\n").filter(Boolean)) {
      const rec = JSON.parse(line) as {
        status: string;
        startedAt: string;
        response?: unknown;
        latency: { totalMs: number; gatewayMs?: number; gatewayRunMs?: number };
      };
      first = Math.min(first, Date.parse(rec.startedAt) - t0Epoch);
      last = Math.max(last, Date.parse(rec.startedAt) - t0Epoch + rec.latency.totalMs);
      if (rec.status !== "ok") continue;
      if (rec.latency.gatewayMs !== undefined) own.push(rec.latency.gatewayMs);
      if (rec.latency.gatewayRunMs !== undefined) ownRun.push(rec.latency.gatewayRunMs);
      const id = /\(call c(\d+)\)/.exec(JSON.stringify(rec.response ?? ""))?.[1];
      const serveMs = id ? calls.get(Number(id)) : undefined;
      if (serveMs !== undefined) endToEnd.push(rec.latency.totalMs - serveMs);
    }
    if (Number.isFinite(first)) firstCall.push(first);
    if (Number.isFinite(first) && Number.isFinite(last)) inLoop.push([first, last]);
  }
  return { own, ownRun, endToEnd, firstCall, peakInLoop: peakOverlap(inLoop) };
}

function runConfig(o: PointOptions, upstreamUrl: string): RunConfig {
  return {
    tasks: [o.taskId],
    groupSize: o.n,
    policies: [`openai:${upstreamUrl}#flakegym-slow`],
    concurrency: o.n,
    maxInfraRetries: 0,
    seed: 0,
    partialCredit: "none",
    weights: { tests: 1, build: 0, lint: 0, judge: 0 },
    testRepeat: 1,
    segments: "last",
    backend: "nomad",
    limits: { maxTurns: o.turns + 2, timeoutMs: 1_800_000, testTimeoutMs: 600_000 },
  };
}

/**
 * Samples the runner's RSS and open fds, and the machine's load average, every second (cheap reads: they count in the runner's CPU
 * too; the fd directory, thousands of entries at N=1000, is listed off the event loop, one listing
 * at a time); `stop()` gives the peaks.
 */
function gauges() {
  let rss = process.memoryUsage.rss();
  let fds = openFds();
  let listing = false;
  const load = { min: loadavg()[0]!, max: loadavg()[0]! };
  const timer = setInterval(() => {
    rss = Math.max(rss, process.memoryUsage.rss());
    const l = loadavg()[0]!;
    [load.min, load.max] = [Math.min(load.min, l), Math.max(load.max, l)];
    if (listing) return;
    listing = true;
    void readdir("/proc/self/fd")
      .then((l) => {
        fds = Math.max(fds, l.length);
      })
      .catch(() => {})
      .finally(() => {
        listing = false;
      });
  }, 1000);
  return {
    stop: () => {
      clearInterval(timer);
      return { rssPeakMb: rss / 1048576, fdsPeak: fds, loadMin: load.min, loadMax: load.max };
    },
  };
}

/** The scheduling policy every thread of each process ran at (harness-priority.ts, read from /proc). */
export type Priorities = Record<"runner" | "cluster" | "upstream" | "idleProbe", string>;

export async function runPoint(
  o: PointOptions,
): Promise<PointResult & { cluster: ClusterStats; priorities: Priorities }> {
  const launcher = harnessLauncher(o.harnessPriority, process.execPath, hasTool);
  const clusterLauncher = o.harnessProfDir
    ? { ...launcher, prefix: [...launcher.prefix, "--cpu-prof", "--cpu-prof-dir", o.harnessProfDir] }
    : launcher;
  // the hold: all N agents in their loop at one instant, released at phases over one turn's period
  const hold = { expected: o.n, timeoutMs: o.holdMs, spreadMs: o.thinkMs + o.toolMs };
  const cluster = await startCluster({ turns: o.turns, toolMs: o.toolMs, hold }, clusterLauncher);
  const upstream = await startUpstream(o.thinkMs, o.intervalMs, launcher);
  const probe = await startLoopProbe();
  try {
    const host = routableAddress();
    const advertise = `${host}:${await freePortOn(host)}`;
    const backend = createNomadBackend(
      {
        driver: { driver: "raw_exec", command: "flakegym-simulated-worker", allowUnisolated: true },
        gatewayAdvertise: advertise,
        startTimeoutMs: 600_000,
        probeIntervalMs: 100,
        snapshotDir: o.snapshotDir,
        ...(o.maxStarts !== undefined ? { maxConcurrentStarts: o.maxStarts } : {}),
      },
      { client: createNomadClient({ address: cluster.ready.nomadUrl, timeoutMs: o.nomadTimeoutMs }) },
    );
    const signal = new AbortController().signal;
    const config = runConfig(o, upstream.ready.baseUrl);
    const deps = await createRolloutDeps(config, {
      runId: `bench-scale-${o.n}`,
      signal,
      env: process.env,
      backend,
      gatewayAdvertise: advertise,
      scratchDir: o.root,
      gatewayMeasureRunTime: true,
    });
    const simulated = { ...deps, score: (i: ScoreInput) => simulatedScore(i.diff, i.signal) };
    await ask(probe.child, "reset");
    const r = await measureRun(o, simulated, config, signal, cluster, upstream);
    // read at the end, so that every thread the processes started is counted
    const priorities: Priorities = {
      runner: describePolicy(process.pid),
      cluster: describePolicy(cluster.child.pid ?? -1),
      upstream: describePolicy(upstream.child.pid ?? -1),
      idleProbe: describePolicy(probe.child.pid ?? -1),
    };
    return { ...r, priorities, idleLoopP99Ms: await ask<number>(probe.child, "p99") };
  } finally {
    probe.child.disconnect();
    cluster.child.disconnect();
    upstream.child.kill("SIGTERM");
  }
}

async function measureRun(
  o: PointOptions,
  deps: Awaited<ReturnType<typeof createRolloutDeps>>,
  config: RunConfig,
  signal: AbortSignal,
  cluster: Awaited<ReturnType<typeof startCluster>>,
  upstream: Awaited<ReturnType<typeof startUpstream>>,
) {
  const out = join(o.root, `run-${o.n}`);
  global.gc?.();
  const rssBaseMb = process.memoryUsage.rss() / 1048576;
  const fdsBase = openFds();
  const loop = monitorEventLoopDelay({ resolution: 10 });
  const ownLoop = startOwnLoopMonitor(10);
  const g = gauges();
  const ticks0 = threadTicks();
  const mainClock = threadRunClock();
  const main0 = mainClock?.now() ?? Number.NaN;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const t0Epoch = Date.now();
  loop.enable();
  let summary: Awaited<ReturnType<typeof runRollout>>["summary"];
  let ticks1 = ticks0;
  try {
    summary = (
      await runRollout({
        out,
        resume: false,
        config,
        runId: `bench-scale-${o.n}`,
        deps,
        progress: () => {},
        signal,
      })
    ).summary;
  } finally {
    loop.disable();
    // read before the gateway's thread ends with the close (an ended thread's time is gone from /proc)
    ticks1 = threadTicks();
    await deps.close();
  }
  const own = ownLoop.stop();
  const cpu = process.cpuUsage(cpu0);
  const mainCpuMs = (mainClock?.now() ?? Number.NaN) - main0;
  // USER_HZ: 100 on Linux (a tick is 10 ms)
  const threadCpu = threadCpuSplit(ticks0, ticks1, process.pid, 10);
  mainClock?.close();
  const wallS = (performance.now() - t0) / 1000;
  const peaks = g.stop();
  const stats = await ask<ClusterStats>(cluster.child, "stats");
  const calls = new Map(
    (await ask<{ n: number; serveMs: number }[]>(upstream.child, "calls")).map((c) => [c.n, c.serveMs]),
  );
  const { own: gwOwn, ownRun: gwRun, endToEnd, firstCall, peakInLoop } = await turnStats(out, calls, t0Epoch);
  const t = summary.trajectories;
  return {
    n: o.n,
    finished: t.finished,
    completed: t.outcomes.completed ?? 0,
    failures: await failureReasons(out),
    lost: t.expected - t.finished,
    outcomes: Object.fromEntries(Object.entries(t.outcomes).filter(([, v]) => v > 0)),
    wallS,
    runnerCpuMs: (cpu.user + cpu.system) / 1000,
    mainCpuMs,
    threadCpu,
    rssBaseMb,
    ...peaks,
    gatewayAddedP50Ms: percentile(gwOwn, 50),
    gatewayAddedP99Ms: percentile(gwOwn, 99),
    gatewayRunP50Ms: percentile(gwRun, 50),
    gatewayRunP99Ms: percentile(gwRun, 99),
    gatewayEndToEndP99Ms: percentile(endToEnd, 99),
    loopP99Ms: loop.percentile(99) / 1e6,
    loopOwnP99Ms: percentile(own.ownMs, 99),
    firstCallP50Ms: percentile(firstCall, 50),
    firstCallP99Ms: percentile(firstCall, 99),
    peakInLoop,
    fdsBase,
    nomadCalls: stats.nomadRequests,
    modelCalls: gwOwn.length,
    cluster: stats,
  };
}
