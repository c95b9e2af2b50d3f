/**
 * `npm run bench -- concurrency [flags]`: measured, not extrapolated (issue 19).
 *
 * 1. boot — the core's boot cuts side by side with the plain boot, alternating in one run: a V8
 *    code cache for the bundle (bench/concurrency/core-code-cache.mjs) and `--optimize-for-size`.
 *    Boot = spawn → first gRPC answer; RSS of cline-core 2 s later.
 * 2. idle — N idle-ready agent workers at once (real bubblewrap + cgroup + cline-host + cline-core),
 *    N stepping up (`--steps`); after each step every core must answer `getProcessInfo` within
 *    `--ready-ms`. Per worker: RSS and PSS of its whole process tree, its cgroup's charge, and the
 *    machine's MemAvailable drop divided by N. It stops at the first step that fails, or before a
 *    step whose projected memory would leave less than `--margin-mb` available. Goal ≥ 48 in 24 GiB.
 * 3. live — N trajectories at once through the real runner (rollout: forks, sandboxes, gateway,
 *    scoring in fresh sandboxes), with a slow model (bench/concurrency/slow-upstream.ts: think time
 *    before every turn, paced chunks). Gateway added latency per call = the gateway's own time for the
 *    call (turns.jsonl) minus the model server's time for it, paired by a call id in the answer.
 *    Goal: every trajectory ends with an outcome (none lost), gateway p99 added ≤ 10 ms.
 *
 * Flags: --parts boot,idle,live  --boot-reps 3  --steps 8,16,32,48,64  --ready-ms 5000
 *   --settle-ms 5000  --margin-mb 3072 (watched while a step starts too: under it the step stops)
 *   --pages-to-scan N (ksm's pages_to_scan for the idle part, restored after)  --start-timeout-ms 900000  --live 48 (capped at the largest
 *   ready N when idle ran)  --think-ms 3000  --interval-ms 20  --task semver-lite-caret-zero.
 * Quick: `npm run bench -- concurrency --boot-reps 1 --steps 2,4 --live 2 --think-ms 500`.
 * The machine is shared: the load average is printed with every part; numbers are pessimistic.
 */
import { type ChildProcess, fork } from "node:child_process";
import { setMaxListeners } from "node:events";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import {
  createClineClient,
  launchClineCore,
  probeMemoryMerge,
  probeOneByteCore,
  resolveClinePackage,
} from "@flakegym/cline-vendor";
import { flakegymCacheRoot } from "../packages/runner/src/cache-root.mjs";
import { createReporter } from "../packages/runner/src/progress/reporter.js";
import { runRollout } from "../packages/runner/src/rollout/run-rollout.js";
import { createRolloutDeps } from "../packages/runner/src/rollout/wire.js";
import type { RunConfig } from "../packages/runner/src/run-format/schema.js";
import { buildSnapshot } from "../packages/runner/src/snapshots/build.js";
import { snapshotSpecOfTask } from "../packages/runner/src/snapshots/spec.js";
import { loadTask } from "../packages/runner/src/tasks/catalog.js";
import { clineAgentLauncher } from "../packages/runner/src/workers/local/cline-agent.js";
import { createLocalBackend } from "../packages/runner/src/workers/local/local-backend.js";
import type { Worker } from "../packages/runner/src/workers/types.js";
import { ksmSettings, withPagesToScan } from "./concurrency/ksm.js";
import { machineMemory, processTrees, treeMemory } from "./concurrency/memory.js";
import { type BenchContext, findFiles, launchBareCore, median, percentile, printTable } from "./lib.js";

const here = dirname(fileURLToPath(import.meta.url));

function flag(args: string[], name: string, def: string): string {
  const i = args.indexOf(`--${name}`);
  if (i < 0) return def;
  const v = args[i + 1];
  if (v === undefined || v.startsWith("--")) throw new Error(`bench concurrency: --${name} needs a value`);
  return v;
}
function num(args: string[], name: string, def: number): number {
  const v = Number(flag(args, name, String(def)));
  if (!Number.isFinite(v) || v < 0) throw new Error(`bench concurrency: --${name} must be a number ≥ 0`);
  return v;
}

const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// 1. boot cuts

interface BootVariant {
  readonly name: string;
  /** Node flags / loader arguments put before the core bundle by a `--node` wrapper script. */
  readonly nodeArgs: (cacheFile: string) => string[];
  readonly codeCache?: boolean;
}

const CODE_CACHE_LOADER = join(here, "concurrency", "core-code-cache.mjs");
const BOOT_VARIANTS: readonly BootVariant[] = [
  { name: "plain", nodeArgs: () => [] },
  {
    name: "code-cache",
    nodeArgs: (f) => [CODE_CACHE_LOADER, "--cache", f, "--"],
    codeCache: true,
  },
  { name: "optimize-for-size", nodeArgs: () => ["--optimize-for-size"] },
];

/** A `--node` for the supervisor: a script that runs this Node with `nodeArgs` before the core's. */
async function nodeWrapper(dir: string, name: string, nodeArgs: readonly string[]): Promise<string> {
  const file = join(dir, `node-${name}.sh`);
  const quoted = [process.execPath, ...nodeArgs].map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
  await writeFile(file, `#!/bin/sh\nexec ${quoted} "$@"\n`);
  await chmod(file, 0o755);
  return file;
}

async function bootOnce(root: string, tag: string, node: string | undefined) {
  const dir = join(root, tag);
  const core = await launchBareCore(dir, node ? { supervisorArgs: ["--node", node] } : {});
  try {
    await sleep(2000);
    const mem = await core.memory();
    const log = await readFile(core.logFile, "utf8");
    const status = /"event":"code-cache","status":"(\w+)"/.exec(log)?.[1];
    return { core, bootMs: core.timings.bootMs, coreRssMb: (mem.coreRssBytes ?? 0) / 1048576, status };
  } finally {
    await core.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function bootCuts(root: string, reps: number) {
  console.log(`\n== boot cuts (${reps} alternating reps; load ${load()})`);
  await mkdir(root, { recursive: true });
  const cacheFile = join(root, "core.v8cache");
  const wrappers = new Map<string, string>();
  for (const v of BOOT_VARIANTS) {
    if (v.name !== "plain") wrappers.set(v.name, await nodeWrapper(root, v.name, v.nodeArgs(cacheFile)));
  }
  // the trusted warm-up: a core on an empty workspace writes the cache on SIGUSR2, then stops
  const producer = await nodeWrapper(root, "produce", [
    CODE_CACHE_LOADER,
    "--cache",
    cacheFile,
    "--produce",
    "--",
  ]);
  await mkdir(join(root, "warm", "ws"), { recursive: true });
  const warm = await launchClineCore({
    workspace: join(root, "warm", "ws"),
    configDir: join(root, "warm", "cfg"),
    home: join(root, "warm", "home"),
    startTimeoutMs: 180_000,
    supervisorArgs: ["--node", producer],
  });
  process.kill(warm.childPids.core, "SIGUSR2");
  for (let i = 0; i < 200 && !(await readFile(warm.logFile, "utf8")).includes("code-cache-written"); i++)
    await sleep(50);
  await warm.stop();

  const samples = new Map<string, { bootMs: number[]; rssMb: number[]; status: Set<string> }>();
  for (let r = 0; r < reps; r++) {
    for (const v of BOOT_VARIANTS) {
      const s = await bootOnce(root, `${v.name}-${r}`, wrappers.get(v.name));
      const acc = samples.get(v.name) ?? { bootMs: [], rssMb: [], status: new Set<string>() };
      acc.bootMs.push(s.bootMs);
      acc.rssMb.push(s.coreRssMb);
      if (s.status) acc.status.add(s.status);
      samples.set(v.name, acc);
      console.log(
        `  rep ${r + 1}/${reps} ${v.name}: boot ${s.bootMs} ms, core RSS ${Math.round(s.coreRssMb)} MiB`,
      );
    }
  }
  const plain = samples.get("plain")!;
  const rows = BOOT_VARIANTS.map((v) => {
    const s = samples.get(v.name)!;
    return {
      variant: v.name,
      "boot p50 ms": median(s.bootMs),
      "× plain": median(s.bootMs) / median(plain.bootMs),
      "core RSS MiB": median(s.rssMb),
      "Δ RSS MiB": median(s.rssMb) - median(plain.rssMb),
      ...(v.codeCache ? { cache: [...s.status].join(",") || "?" } : { cache: "" }),
    };
  });
  printTable(rows);
  console.log(
    "  code-cache is measured only: on Node 20 (V8 11.3) a script compiled from a code cache loses its\n" +
      "  host-defined options, so import() inside the core would throw ERR_VM_DYNAMIC_IMPORT_CALLBACK_MISSING\n" +
      "  (the core has such calls); V8 fixed it for Node ≥ 22, where NODE_COMPILE_CACHE does the same job.",
  );
  return {
    rows,
    samples: Object.fromEntries([...samples].map(([k, v]) => [k, { ...v, status: [...v.status] }])),
    load: load(),
  };
}

// ---------------------------------------------------------------------------------------------
// 2. idle-ready workers

interface Idle {
  readonly worker: Worker;
  readonly startMs: number;
}

/** Every worker's core answers getProcessInfo within `readyMs`: the answer times, or why not. */
async function probeReady(workers: readonly Idle[], readyMs: number) {
  const times: number[] = [];
  const failures: string[] = [];
  await Promise.all(
    workers.map(async ({ worker }) => {
      const client = createClineClient({ address: worker.agentAddress! });
      const t0 = performance.now();
      try {
        await client.state.getProcessInfo({ deadlineMs: readyMs });
        times.push(performance.now() - t0);
      } catch (err) {
        failures.push(`${worker.id}: ${(err as Error).message.split("\n")[0]}`);
      } finally {
        client.close();
      }
    }),
  );
  return { times, failures };
}

/**
 * Polls MemAvailable every 250 ms; aborts its signal when it falls under `marginMb`. `stop()` ends
 * the polling and returns the lowest value seen (MiB).
 */
function watchMemory(marginMb: number): { signal: AbortSignal; stop(): number } {
  const ac = new AbortController();
  setMaxListeners(Number.POSITIVE_INFINITY, ac.signal); // every start of a step listens on it
  let lowest = Number.POSITIVE_INFINITY;
  const timer = setInterval(() => {
    void machineMemory().then((m) => {
      lowest = Math.min(lowest, m.availableMb);
      if (m.availableMb < marginMb && !ac.signal.aborted)
        ac.abort(new Error(`MemAvailable ${Math.round(m.availableMb)} MiB < margin ${marginMb} MiB`));
    });
  }, 250);
  return {
    signal: ac.signal,
    stop() {
      clearInterval(timer);
      return lowest;
    },
  };
}

async function idleReady(root: string, args: string[]) {
  const steps = flag(args, "steps", "8,16,32,48,64").split(",").map(Number);
  const readyMs = num(args, "ready-ms", 5000);
  const settleMs = num(args, "settle-ms", 5000);
  const marginMb = num(args, "margin-mb", 3072);
  const startTimeoutMs = num(args, "start-timeout-ms", 900_000);
  console.log(`\n== idle-ready workers, steps ${steps.join(",")} (load ${load()})`);
  const oneByte = probeOneByteCore(resolveClinePackage(), flakegymCacheRoot(process.env));
  const merge = probeMemoryMerge();
  console.log(
    `   the default launch: same-page merging ${merge.on ? "on" : `off (${merge.reason})`} (${await ksmSettings()}); one-byte bundle ${oneByte.on ? "on" : `off (${oneByte.reason})`}; keeps ≥ ${marginMb} MiB available (--margin-mb), watched while a step starts`,
  );
  await mkdir(root, { recursive: true });
  const socketPath = join(root, "gateway.sock");
  const gw = createServer((s) => s.end());
  await new Promise<void>((r) => gw.listen(socketPath, r));
  const backend = createLocalBackend({
    stateDir: join(root, "w"),
    agent: clineAgentLauncher({ startTimeoutMs }),
  });
  const baseline = await machineMemory();
  const workers: Idle[] = [];
  const rows: Record<string, string | number>[] = [];
  const pssByKind: Record<string, number>[] = [];
  let largestReady = 0;
  let stopReason = "all steps passed";
  try {
    for (const n of steps) {
      const before = await machineMemory();
      const perWorkerSoFar =
        workers.length > 0 ? (baseline.availableMb - before.availableMb) / workers.length : 500;
      const projected = before.availableMb - (n - workers.length) * perWorkerSoFar;
      if (projected < marginMb) {
        stopReason = `N=${n} would leave ~${Math.round(projected)} MiB available (margin ${marginMb} MiB)`;
        break;
      }
      const t0 = performance.now();
      // the machine is shared: a step whose starts take MemAvailable under the margin is stopped
      const watch = watchMemory(marginMb);
      const started = await Promise.allSettled(
        Array.from({ length: n - workers.length }, async (_, k) => {
          const i = workers.length + k;
          const ws = join(root, "ws", String(i));
          await mkdir(ws, { recursive: true });
          await writeFile(join(ws, "README.md"), "idle worker\n");
          const ts = performance.now();
          const worker = await backend.start(
            {
              runId: "bench-conc",
              taskId: "idle",
              trajectoryId: String(i),
              profile: "node",
              workspace: ws,
              gateway: { socketPath },
              limits: { memoryMb: 2048, pids: 512, cpuSeconds: 3600, diskMb: 256, wallClockMs: 3_600_000 },
              agent: true,
            },
            watch.signal,
          );
          return { worker, startMs: performance.now() - ts };
        }),
      );
      const stepMs = performance.now() - t0;
      const lowest = watch.stop();
      const failedStarts = started.filter((s) => s.status === "rejected") as PromiseRejectedResult[];
      for (const s of started) if (s.status === "fulfilled") workers.push(s.value);
      await sleep(settleMs);
      const probe = await probeReady(workers, readyMs);
      const after = await machineMemory();
      const trees = await processTrees(workers.map((w) => w.worker.configDir!));
      const mems = await Promise.all([...trees.values()].map(treeMemory));
      const ready =
        !watch.signal.aborted &&
        failedStarts.length === 0 &&
        probe.failures.length === 0 &&
        workers.length === n;
      const row = {
        N: n,
        ready: ready ? "yes" : "NO",
        "step s": stepMs / 1000,
        "start p50 s": median(workers.map((w) => w.startMs)) / 1000,
        "start max s": Math.max(...workers.map((w) => w.startMs)) / 1000,
        "gRPC p99 ms": percentile(probe.times, 99),
        "procs/worker": median(mems.map((m) => m.processes)),
        "RSS/worker MiB": median(mems.map((m) => m.rssMb)),
        "PSS/worker MiB": median(mems.map((m) => m.pssMb)),
        "cgroup/worker MiB": median(mems.map((m) => m.cgroupMb ?? Number.NaN)),
        "ΔAvail/worker MiB": (baseline.availableMb - after.availableMb) / workers.length,
        "avail MiB": after.availableMb,
        "min avail MiB": lowest,
        load: load(),
      };
      rows.push(row);
      printTable([row]);
      const kinds = [...new Set(mems.flatMap((m) => Object.keys(m.pssByKindMb)))].sort();
      console.log(
        `  PSS per worker by process (median MiB): ${kinds
          .map((k) => `${k} ${median(mems.map((m) => m.pssByKindMb[k] ?? 0)).toFixed(1)}`)
          .join(", ")}`,
      );
      pssByKind.push({
        N: n,
        ...Object.fromEntries(kinds.map((k) => [k, median(mems.map((m) => m.pssByKindMb[k] ?? 0))])),
      });
      if (watch.signal.aborted) {
        stopReason = `N=${n} stopped while starting: MemAvailable fell to ${Math.round(lowest)} MiB (margin ${marginMb} MiB); ${workers.length} workers were up`;
        break;
      }
      if (!ready) {
        stopReason = `N=${n} not ready: ${[
          ...failedStarts.map((f) => String((f.reason as Error)?.message ?? f.reason).split("\n")[0]),
          ...probe.failures,
        ]
          .slice(0, 3)
          .join("; ")}`;
        break;
      }
      largestReady = n;
    }
  } finally {
    console.log(`  stopping ${workers.length} workers…`);
    for (let i = 0; i < workers.length; i += 16)
      await Promise.all(workers.slice(i, i + 16).map((w) => w.worker.stop().catch(() => {})));
    gw.close();
  }
  console.log(`\nlargest N with every core ready: ${largestReady} (goal ≥ 48); stopped: ${stopReason}`);
  printTable(rows);
  return {
    rows,
    largestReady,
    stopReason,
    baselineAvailableMb: baseline.availableMb,
    totalMb: baseline.totalMb,
  };
}

// ---------------------------------------------------------------------------------------------
// 3. live trajectories

interface UpstreamCall {
  readonly n: number;
  readonly turn: number;
  readonly serveMs: number;
}

function startUpstream(
  thinkMs: number,
  intervalMs: number,
): Promise<{ child: ChildProcess; baseUrl: string }> {
  const child = fork(join(here, "concurrency", "slow-upstream.ts"), [String(thinkMs), String(intervalMs)], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the slow upstream did not start within 60 s")), 60_000);
    child.once("exit", (code) => reject(new Error(`the slow upstream exited (${code})`)));
    child.on("message", (m: { ready?: { baseUrl: string } }) => {
      if (m.ready) {
        clearTimeout(timer);
        resolve({ child, baseUrl: m.ready.baseUrl });
      }
    });
  });
}

function upstreamCalls(child: ChildProcess): Promise<UpstreamCall[]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the slow upstream did not report its calls")), 10_000);
    child.on("message", (m: { calls?: UpstreamCall[] }) => {
      if (m.calls) {
        clearTimeout(timer);
        resolve(m.calls);
      }
    });
    child.send({ calls: true });
  });
}

async function liveTrajectories(root: string, args: string[], n: number) {
  const thinkMs = num(args, "think-ms", 3000);
  const intervalMs = num(args, "interval-ms", 20);
  const taskId = flag(args, "task", "semver-lite-caret-zero");
  const startTimeoutMs = num(args, "start-timeout-ms", 900_000);
  console.log(`\n== ${n} live trajectories of ${taskId}, think ${thinkMs} ms ±50 %/turn (load ${load()})`);
  await mkdir(root, { recursive: true });
  const signal = new AbortController().signal;
  const task = await loadTask(taskId);
  await buildSnapshot(snapshotSpecOfTask(task), { signal });
  const upstream = await startUpstream(thinkMs, intervalMs);
  const config: RunConfig = {
    tasks: [taskId],
    groupSize: n,
    policies: [`openai:${upstream.baseUrl}#flakegym-slow`],
    concurrency: n,
    maxInfraRetries: 1,
    seed: 0,
    partialCredit: "none",
    weights: { tests: 1, build: 0, lint: 0, judge: 0 },
    testRepeat: 1,
    segments: "last",
    backend: "local",
    limits: { maxTurns: 10, timeoutMs: 1_800_000, testTimeoutMs: 600_000 },
  };
  const out = join(root, "run");
  const loop = monitorEventLoopDelay({ resolution: 10 });
  let minAvailMb = (await machineMemory()).availableMb;
  let maxLoad = 0;
  const sampler = setInterval(async () => {
    minAvailMb = Math.min(minAvailMb, (await machineMemory()).availableMb);
    maxLoad = Math.max(maxLoad, loadavg()[0]!);
  }, 2000);
  const deps = await createRolloutDeps(config, {
    runId: "bench-conc",
    signal,
    env: process.env,
    backend: createLocalBackend({
      stateDir: join(root, "live-workers"),
      agent: clineAgentLauncher({ startTimeoutMs }),
    }),
  });
  const reporter = createReporter(process.stderr, { live: false });
  const t0 = performance.now();
  loop.enable();
  let summary: Awaited<ReturnType<typeof runRollout>>["summary"];
  try {
    summary = (
      await runRollout({ out, resume: false, config, runId: "bench-conc", deps, progress: () => {}, signal })
    ).summary;
  } finally {
    loop.disable();
    clearInterval(sampler);
    reporter.close();
    await deps.close();
  }
  const wallMs = performance.now() - t0;
  const calls = new Map((await upstreamCalls(upstream.child)).map((c) => [c.n, c]));
  upstream.child.kill("SIGTERM");

  // pair each call the gateway logged with the model server's own time for it
  const added: number[] = [];
  const perTrajectoryMax: number[] = [];
  let unpaired = 0;
  let turns = 0;
  for (const file of await findFiles(out, "turns.jsonl")) {
    let worst = 0;
    for (const line of (await readFile(file, "utf8")).split("\n").filter(Boolean)) {
      const rec = JSON.parse(line) as { status: string; response?: unknown; latency: { totalMs: number } };
      turns++;
      const id = /\(call c(\d+)\)/.exec(JSON.stringify(rec.response ?? ""))?.[1];
      const call = id ? calls.get(Number(id)) : undefined;
      if (rec.status !== "ok" || !call) {
        unpaired++;
        continue;
      }
      const a = rec.latency.totalMs - call.serveMs;
      added.push(a);
      worst = Math.max(worst, a);
    }
    perTrajectoryMax.push(worst);
  }
  for (const task of summary.tasks)
    if (task.error) console.log(`  task ${task.taskId}: ${task.error.code}: ${task.error.message}`);
  const t = summary.trajectories;
  const row = {
    N: n,
    "wall s": wallMs / 1000,
    finished: `${t.finished}/${t.expected}`,
    lost: t.expected - t.finished,
    outcomes: Object.entries(t.outcomes)
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `${k}:${v}`)
      .join(" "),
    "infra retries": t.infraRetries,
    "model calls": turns,
    "added p50 ms": percentile(added, 50),
    "added p99 ms": percentile(added, 99),
    "added max ms": added.length ? Math.max(...added) : Number.NaN,
    "loop delay p99 ms": loop.percentile(99) / 1e6,
    "min avail MiB": minAvailMb,
    "max load1": maxLoad,
  };
  console.log("");
  printTable([row]);
  console.log(
    "  added = the gateway's time for a call (body read → response ended, turns.jsonl) minus the model\n" +
      "  server's time for it (body read → last byte); loop delay = the runner's event-loop delay over\n" +
      "  the whole run (the gateway has its own thread since issue 19; the cores' gRPC, sandboxes and scoring stay on it)." +
      (unpaired ? `\n  ${unpaired} logged calls could not be paired (not ok, or no call id).` : ""),
  );
  return { row, summary, added, perTrajectoryMax, unpaired, thinkMs, intervalMs, taskId };
}

// ---------------------------------------------------------------------------------------------

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const parts = new Set(flag(args, "parts", "boot,idle,live").split(","));
  const root = await mkdtemp(join(tmpdir(), "fg-conc-"));
  const mem = await machineMemory();
  const result: Record<string, unknown> = {
    date: new Date().toISOString(),
    node: process.version,
    memTotalMb: mem.totalMb,
    loadAtStart: load(),
    args,
  };
  console.log(`bench concurrency: ${new Date().toISOString()}, Node ${process.version}, load ${load()}`);
  try {
    if (parts.has("boot")) result.boot = await bootCuts(join(root, "boot"), num(args, "boot-reps", 3));
    let liveN = num(args, "live", 48);
    if (parts.has("idle")) {
      const scan = flag(args, "pages-to-scan", "");
      const idle = await withPagesToScan(scan === "" ? undefined : num(args, "pages-to-scan", 100), () =>
        idleReady(join(root, "idle"), args),
      );
      result.idle = idle;
      liveN = Math.min(liveN, Math.max(1, idle.largestReady));
    }
    if (parts.has("live")) result.live = await liveTrajectories(join(root, "live"), args, liveN);
  } finally {
    result.loadAtEnd = load();
    await rm(root, { recursive: true, force: true }).catch(() => {});
  }
  ctx.writeResult("concurrency", result);
}
