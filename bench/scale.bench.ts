/**
 * `npm run bench -- scale [flags]`: one runner, up to a thousand trajectories at once (issue 49).
 *
 * The REAL control plane — runRollout (orchestration, run directory writers), the policy gateway
 * in its thread, the Nomad backend and client — against the project's Nomad double in a child
 * process whose allocations are SIMULATED workers (bench/scale/sim-core.ts): each answers the Cline
 * core's gRPC surface behind the supervisor's token gate, and its agent is a scripted loop of
 * Cline-sized model calls (~40 KB system prompt + history) through the gateway to an upstream
 * double that thinks, then streams. Scoring is simulated (a fixed score; no hidden tests run).
 * Measured in the runner's process only: CPU, RSS, event-loop delay (wall, and its own: own-loop.ts),
 * fds; the gateway's own time per call (turn log `latency.gatewayMs`, timestamped inside it) and end
 * to end (turn total less the upstream's own time); Nomad API calls at the double.
 *
 * Flags: --points 10,100,300,1000  --turns 5  --think-ms 10000 (a model's time to answer a Cline-sized
 *   request, ±50 %: with all N live at once, N agents make ≈ N / 12 calls per second; 2000 is the
 *   stress case, ≈ N / 3 per second)  --interval-ms 20  --tool-ms 300
 *   --task semver-lite-caret-zero  --max-starts <the Nomad backend's maxConcurrentStarts, default 32>
 *   --point-timeout-s 3600  --harness-priority normal|nice|idle (default normal: the cluster and the
 *   upstream double at the runner's priority, a fair share of this machine; `nice` runs them under
 *   `nice -n 19`, weight 15 against the runner's 1024: at load 30–37 the cluster's own loop then
 *   stalled 9–12 s and its cores answered the runner's control calls past their 15 s deadline;
 *   `idle` runs them SCHED_IDLE, which starved the Nomad double for over 30 s at load 40)
 *   --nomad-timeout-s 120 (the Nomad client's deadline per call: the double, in the harness, answers
 *   late on a busy machine; the client's default is 30)  --hold-s 1800 (the hold's bound: every simulated
 *   agent, its first call answered, waits until all N have answered theirs, so that N are in their
 *   agent loop at once; then each resumes at a random phase within one turn: hold.ts). Each point runs in a process of its own (point-child.ts: honest RSS per
 *   trajectory). Profile the largest point with
 *   `node --cpu-prof --cpu-prof-dir <dir> --import tsx bench/run.ts scale --points 1000`
 *   (each point's process writes its own profiles); the cluster process's with
 *   `--harness-cpu-prof-dir <dir>`.
 * Last line: `scale: <N> concurrent, runner-cpu …/traj, rss …/traj, gateway-p99 …, loop-p99 …`
 * with ratios against the smallest point.
 */
import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildSnapshot } from "../packages/runner/src/snapshots/build.js";
import { snapshotSpecOfTask } from "../packages/runner/src/snapshots/spec.js";
import { loadTask } from "../packages/runner/src/tasks/catalog.js";
import { type BenchContext, benchFlags, loadStr, printTable } from "./lib.js";
import { parseHarnessPriority } from "./scale/harness-priority.js";
import {
  caveats,
  judge,
  marginal,
  overlapLine,
  type PointResult,
  perTrajectory,
  summaryLine,
  threadCpuLine,
} from "./scale/judge.js";
import { plotSeries, plotSvg } from "./scale/plot.js";
import type { runPoint } from "./scale/point.js";
import { runPointInChild } from "./scale/processes.js";

function row(p: PointResult, prev?: PointResult) {
  const per = perTrajectory(p);
  const slope = prev ? marginal(prev, p) : undefined;
  return {
    N: p.n,
    completed: `${p.completed}/${p.n}`,
    "wall s": p.wallS,
    "cpu ms/traj": per.cpuMs,
    "main-thread cpu ms/traj": p.mainCpuMs / p.n,
    "main-thread busy %": (100 * p.mainCpuMs) / (p.wallS * 1000),
    "marginal cpu ms": slope ? slope.cpuMs : "",
    "rss peak MiB": p.rssPeakMb,
    "rss MiB/traj": per.rssMb,
    "marginal rss MiB": slope ? slope.rssMb : "",
    "gw add p50 ms": p.gatewayAddedP50Ms,
    "gw add p99 ms": p.gatewayAddedP99Ms,
    "gw own-core p50 ms": p.gatewayRunP50Ms,
    "gw own-core p99 ms": p.gatewayRunP99Ms,
    "gw e2e p99 ms": p.gatewayEndToEndP99Ms,
    "loop own p99 ms": p.loopOwnP99Ms,
    "loop p99 ms": p.loopP99Ms,
    "idle p99 ms": p.idleLoopP99Ms,
    "1st call p50 s": p.firstCallP50Ms / 1000,
    "1st call p99 s": p.firstCallP99Ms / 1000,
    "peak in loop": p.peakInLoop,
    "fds peak": p.fdsPeak,
    "nomad calls/traj": per.nomadCalls,
    "load min–max": `${p.loadMin.toFixed(1)}–${p.loadMax.toFixed(1)}`,
  };
}

const SIMULATED =
  "workers are SIMULATED: each Nomad allocation (placed by the project's Nomad double, in a child process) serves the\n" +
  "  Cline core's gRPC surface and the supervisor's diff gate in-process; its agent is a scripted loop of Cline-sized\n" +
  "  model calls (40 KB system prompt + 6 KB per tool result) through the real gateway to an upstream double\n" +
  "  (think time, streamed 4-char chunks); no tool runs, no sandbox, and scoring is a fixed score (no hidden tests).\n" +
  "  Each agent, its first call answered, is HELD in its first tool step until all N have answered theirs (--hold-s),\n" +
  "  then resumes at a random phase within one turn: so all N are in their agent loop at one instant.\n" +
  "  Real: runRollout, createRolloutDeps (run directory), the gateway thread, the Nomad backend (its start queue) and client;\n" +
  "  the backend's shared snapshotDir is the snapshot's tree, so no trajectory forks it on this host (hostForks false).\n" +
  "  The harness (cluster and upstream processes) runs at the priority --harness-priority names (default normal);\n" +
  "  the runner and the idle reference process at normal priority (each point prints the policies in force).";

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const { flag, num } = benchFlags("scale", args);
  const points = flag("points", "10,100,300,1000")
    .split(",")
    .map(Number)
    .sort((a, b) => a - b);
  if (points.some((n) => !Number.isInteger(n) || n < 1))
    throw new Error("bench scale: --points must be positive integers, e.g. 10,100,300,1000");
  const opts = {
    taskId: flag("task", "semver-lite-caret-zero"),
    turns: num("turns", 5),
    thinkMs: num("think-ms", 10_000),
    intervalMs: num("interval-ms", 20),
    toolMs: num("tool-ms", 300),
    maxStarts: flag("max-starts", "") === "" ? undefined : num("max-starts", 32),
    harnessPriority: parseHarnessPriority(flag("harness-priority", "normal")),
    nomadTimeoutMs: num("nomad-timeout-s", 120) * 1000,
    holdMs: num("hold-s", 1800) * 1000,
    harnessProfDir: flag("harness-cpu-prof-dir", ""),
  };
  const pointTimeoutS = num("point-timeout-s", 3600);
  console.log(
    `bench scale: ${new Date().toISOString()}, Node ${process.version}, load ${loadStr()}\n  ${SIMULATED}`,
  );
  console.log(
    `  ${opts.turns} model calls per trajectory, think ${opts.thinkMs} ms ±50 %, tool ${opts.toolMs} ms; task ${opts.taskId}`,
  );
  const snapshot = await buildSnapshot(snapshotSpecOfTask(await loadTask(opts.taskId)), {
    signal: new AbortController().signal,
  });
  const root = await mkdtemp(join(tmpdir(), "fg-scale-"));
  const results: PointResult[] = [];
  try {
    for (const n of points) {
      console.log(`\n== ${n} concurrent (load ${loadStr()})`);
      // each point in a process of its own: its RSS and heap owe nothing to the points before
      const r = await runPointInChild<Awaited<ReturnType<typeof runPoint>>>(
        { n, root, ...opts, snapshotDir: snapshot.workspace },
        pointTimeoutS * 1000,
      );
      const { cluster, priorities, ...point } = r;
      results.push(point);
      printTable([row(point, results[results.length - 2])]);
      console.log(
        `  outcomes ${JSON.stringify(point.outcomes)}; cluster: ${JSON.stringify({ ...cluster, nomadByRoute: undefined })}`,
      );
      console.log(`  nomad calls by route: ${JSON.stringify(cluster.nomadByRoute)}`);
      console.log(`  ${overlapLine(point, cluster.hold)}`);
      console.log(`  ${threadCpuLine(point.threadCpu, point.wallS)}`);
      console.log(
        `  the cluster (harness): its own loop p99 ${cluster.loopP99Ms.toFixed(0)} ms, max ${cluster.loopMaxMs.toFixed(0)} ms; CPU ${(cluster.cpuMs / 1000).toFixed(1)} s`,
      );
      console.log(
        `  threads' CPU policy (read from /proc at the point's end): ${Object.entries(priorities)
          .map(([k, v]) => `${k} ${v}`)
          .join("; ")}`,
      );
      for (const f of point.failures) console.log(`  not completed: ${f}`);
      await rm(join(root, `run-${n}`), { recursive: true, force: true });
    }
  } finally {
    await rm(root, { recursive: true, force: true }).catch(() => {});
  }
  report(ctx, results, opts);
}

function report(ctx: BenchContext, results: PointResult[], opts: object): void {
  console.log("");
  printTable(results.map((p, i) => row(p, results[i - 1])));
  console.log(
    "  marginal = what each trajectory added since the previous point (the slope, free of fixed costs).\n" +
      "  cpu = process.cpuUsage() of the runner (every thread: the gateway's too); rss above the idle runner.\n" +
      "  main-thread = the CPU time of the runner's event-loop thread alone (schedstat); busy % = of the run's wall time.\n" +
      "  idle p99 = the event-loop delay of an idle process at the runner's priority meanwhile: the machine's floor\n" +
      "  (the harness's load included at --harness-priority normal; with nice or idle, the other users of this machine).\n" +
      "  loop p99 = the runner's own monitorEventLoopDelay (wall: waits for a core included).\n" +
      "  loop own p99 = the runner's timer lateness, each sample capped by the CPU time its main thread ran meanwhile\n" +
      "  (an upper bound of what its own work held the loop; the rest was waiting for a core).\n" +
      "  gw add = the gateway's own time per call, timestamped inside it (body read → answer, less the upstream's waits);\n" +
      "  gw own-core = the same, each piece capped by the CPU time the gateway's thread ran meanwhile (its schedstat):\n" +
      "  its time on a core of its own (other calls' work in it included), this machine's waits for a core excluded;\n" +
      "  gw e2e = a turn's total less the upstream's serving time (this machine's scheduling delays included).\n" +
      "  peak in loop = the most trajectories between their first model call and their last call's end at one instant\n" +
      "  (all N are admitted at once; the hold keeps each agent, its first call answered, until all N have answered\n" +
      "  theirs, so this is N unless a trajectory ended early or the hold's bound ran out; the bench fails below N).\n" +
      "  load min–max = the machine's 1-minute load average over the point, sampled each second.",
  );
  const svg = join(ctx.outDir, "scale.svg");
  writeFileSync(svg, plotSvg(plotSeries(results)));
  console.log(`plot: ${svg}`);
  ctx.writeResult("scale", {
    date: new Date().toISOString(),
    node: process.version,
    load: loadStr(),
    opts,
    results,
  });
  const [smallest, largest] = [results[0]!, results[results.length - 1]!];
  const fails = judge(largest, smallest);
  console.log(fails.length ? `targets NOT met: ${fails.join("; ")}` : "targets met");
  for (const c of caveats(largest)) console.log(`  caveat: ${c}`);
  console.log(summaryLine(largest, smallest));
}
