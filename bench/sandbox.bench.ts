/**
 * `npm run bench -- sandbox [--sizes 10,100,1000] [--workers 3]`
 *
 * 1. Fork time per method (reflink / overlay / copy, whichever work here) for synthetic repos of
 *    10 MB, 100 MB and 1 GB. Goal: ≤ 50 ms and flat in size where reflink/overlay is available.
 * 2. Sandbox overhead: a sandboxed worker's start + first exec vs the same command run bare, and
 *    worker ready time (fork + sandbox + host + core) vs a bare cline-core start, alternating in
 *    the same run (goal ≤ 1.15×).
 * 3. Idle-ready workers per 24 GiB: RSS of a few idle workers (the supervisor's process tree),
 *    extrapolated — labelled as such (goal ≥ 24).
 * 4. The warm pool (`--pool-reps 10`): worker ready from the pool (fork + adopt) vs a bare
 *    cline-core boot (goal p50 ≤ 0.1×, p99 ≤ 0.25×), and cold ready (fork + sandbox + core) vs bare
 *    boot (goal ≤ 1.05×), alternating in the same run, each measured with no boot in the background.
 *
 * `--only fork,overhead,agent,pool` runs some sections only.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchClineCore } from "@flakegym/cline-vendor";
import {
  availableForkMethods,
  createLocalBackend,
  createWorkerPool,
  forkTree,
  type WorkerSpec,
} from "../packages/runner/src/index.js";
import { runSandboxed } from "../packages/runner/src/workers/local/sandbox.js";
import { type BenchContext, median, percentile, printTable } from "./lib.js";

function arg(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
}

async function makeRepo(dir: string, mb: number): Promise<void> {
  const fileKb = 256;
  const files = Math.max(1, Math.round((mb * 1024) / fileKb));
  const chunk = randomBytes(fileKb * 1024);
  for (let i = 0; i < files; i++) {
    const sub = join(dir, "workspace", `d${i % 32}`);
    if (i < 32) await mkdir(sub, { recursive: true });
    await writeFile(join(sub, `f${i}.bin`), chunk);
  }
  await mkdir(join(dir, "deps"), { recursive: true });
}

interface Proc {
  pid: number;
  ppid: number;
  cmdline: string;
  rssKb: number;
}

async function procs(): Promise<Proc[]> {
  const out: Proc[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const status = await readFile(`/proc/${name}/status`, "utf8");
      const cmdline = (await readFile(`/proc/${name}/cmdline`, "utf8")).replaceAll("\0", " ");
      out.push({
        pid: Number(name),
        ppid: Number(/PPid:\s+(\d+)/.exec(status)?.[1]),
        rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0),
        cmdline,
      });
    } catch {
      // gone
    }
  }
  return out;
}

/** RSS (kB) of the process whose command line contains `needle` and all its descendants. */
async function treeRssKb(needle: string): Promise<number> {
  const all = await procs();
  const roots = all.filter((p) => p.cmdline.includes(needle) && p.pid !== process.pid);
  const seen = new Set<number>(roots.map((r) => r.pid));
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of all) {
      if (!seen.has(p.pid) && seen.has(p.ppid)) {
        seen.add(p.pid);
        grew = true;
      }
    }
  }
  return all.filter((p) => seen.has(p.pid)).reduce((a, p) => a + p.rssKb, 0);
}

async function agentBench(
  root: string,
  lower: string,
  workers: number,
  reps: number,
): Promise<Record<string, unknown>> {
  const socketPath = join(root, "gateway.sock");
  const gw = createServer((s) => s.end());
  await new Promise<void>((r) => gw.listen(socketPath, r));
  const backend = createLocalBackend({ stateDir: join(root, "agent-workers") });
  const spec = (i: string, workspace: string) => ({
    runId: "bench",
    taskId: "bench",
    trajectoryId: i,
    profile: "node" as const,
    workspace,
    gateway: { socketPath },
    limits: { memoryMb: 2048, pids: 512, cpuSeconds: 600, diskMb: 256, wallClockMs: 600_000 },
    agent: true,
  });
  const bare: number[] = [];
  const sandboxed: number[] = [];
  try {
    for (let i = 0; i < reps; i++) {
      // bare cline-core start (no fork, no sandbox), then a full worker, alternating
      const dir = join(root, `bare-core-${i}`);
      await mkdir(join(dir, "ws"), { recursive: true });
      const t0 = performance.now();
      const core = await launchClineCore({
        workspace: join(dir, "ws"),
        configDir: join(dir, "cfg"),
        home: join(dir, "home"),
        startTimeoutMs: 120_000,
      });
      bare.push(performance.now() - t0);
      await core.stop();
      const t1 = performance.now();
      const fork = await forkTree(lower, { dest: join(root, `agent-fork-${i}`), quotaMb: 256 });
      const worker = await backend.start(spec(`ready-${i}`, join(fork.tree, "workspace")));
      sandboxed.push(performance.now() - t1);
      await worker.stop();
      await fork.release();
      process.stdout.write(
        `  rep ${i + 1}/${reps}: bare ${Math.round(bare.at(-1)!)} ms, worker ${Math.round(sandboxed.at(-1)!)} ms\n`,
      );
    }
    const ready = {
      workerReadyMedianMs: median(sandboxed),
      bareCoreMedianMs: median(bare),
      ratio: median(sandboxed) / median(bare),
      goal: "≤ 1.15×",
    };
    console.log("\nworker ready (fork + sandbox + host + core) vs bare cline-core start");
    printTable([ready]);

    // idle RSS of a few workers at once, extrapolated to 24 GiB
    const started: { worker: Awaited<ReturnType<typeof backend.start>>; release: () => Promise<void> }[] = [];
    const rss: number[] = [];
    try {
      for (let i = 0; i < workers; i++) {
        const fork = await forkTree(lower, { dest: join(root, `idle-fork-${i}`), quotaMb: 256 });
        const worker = await backend.start(spec(`idle-${i}`, join(fork.tree, "workspace")));
        started.push({ worker, release: async () => void (await fork.release()) });
      }
      await new Promise((r) => setTimeout(r, 3000));
      for (const { worker } of started) rss.push((await treeRssKb(worker.configDir!)) / 1024);
    } finally {
      for (const s of started) {
        await s.worker.stop();
        await s.release();
      }
    }
    const perWorkerMb = median(rss);
    const fit = Math.floor((24 * 1024) / perWorkerMb);
    const memory = {
      measuredWorkers: workers,
      rssPerIdleWorkerMb: perWorkerMb,
      "workersIn24GiB (EXTRAPOLATED)": fit,
      goal: "≥ 24",
    };
    console.log("\nidle-ready workers per 24 GiB (extrapolated from the RSS of a few)");
    printTable([memory]);
    return { ready, memory, rssMb: rss, bareMs: bare, workerMs: sandboxed };
  } finally {
    gw.close();
  }
}

/** Polls `pred` (bounded): the pool settling before a measurement. */
async function settle(pred: () => boolean, ms: number): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`the pool did not settle within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Ready from the warm pool vs a bare core boot vs a cold worker, alternating. Each measurement
 * starts with the pool full and nothing booting, so none pays for another's boot.
 */
async function poolBench(root: string, lower: string, reps: number): Promise<Record<string, unknown>> {
  const socketPath = join(root, "pool-gateway.sock");
  const gw = createServer((s) => s.end());
  await new Promise<void>((r) => gw.listen(socketPath, r));
  const backend = createLocalBackend({ stateDir: join(root, "pool-workers") });
  const unavailable = await backend.poolUnavailable();
  if (unavailable) {
    console.log(`
warm pool: skipped (${unavailable})`);
    gw.close();
    return { skipped: unavailable };
  }
  const pool = createWorkerPool(backend, { size: 1, idleMs: 600_000, maxBooting: 1 });
  const spec = (i: string, fork: { tree: string }): WorkerSpec => ({
    runId: "bench",
    taskId: "bench",
    trajectoryId: i,
    profile: "node",
    workspace: join(fork.tree, "workspace"),
    depsDir: join(fork.tree, "deps"),
    gateway: { socketPath },
    limits: { memoryMb: 2048, pids: 512, cpuSeconds: 600, diskMb: 256, wallClockMs: 600_000 },
    agent: true,
  });
  const full = () => pool.state().idle === 1 && pool.state().booting === 0;
  const pooled: number[] = [];
  const bare: number[] = [];
  const cold: number[] = [];
  try {
    const warmFork = await forkTree(lower, { dest: join(root, "pool-warm"), quotaMb: 256 });
    await pool.warm(spec("warm", warmFork));
    await warmFork.release();
    for (let i = 0; i < reps; i++) {
      await settle(full, 180_000);
      const t0 = performance.now();
      const f0 = await forkTree(lower, { dest: join(root, `pool-fork-${i}`), quotaMb: 256 });
      const w = await pool.start(spec(`pooled-${i}`, f0));
      pooled.push(performance.now() - t0);
      if (!w.pooled) throw new Error("the pool handed out a cold worker while full");
      await w.stop();
      await f0.release();
      await settle(full, 180_000);

      const dir = join(root, `pool-bare-${i}`);
      await mkdir(join(dir, "ws"), { recursive: true });
      const t1 = performance.now();
      const core = await launchClineCore({
        workspace: join(dir, "ws"),
        configDir: join(dir, "cfg"),
        home: join(dir, "home"),
        startTimeoutMs: 120_000,
      });
      bare.push(performance.now() - t1);
      await core.stop();

      const t2 = performance.now();
      const f2 = await forkTree(lower, { dest: join(root, `cold-fork-${i}`), quotaMb: 256 });
      const c = await backend.start(spec(`cold-${i}`, f2));
      cold.push(performance.now() - t2);
      await c.stop();
      await f2.release();
      process.stdout.write(
        `  rep ${i + 1}/${reps}: pooled ${Math.round(pooled.at(-1)!)} ms, bare ${Math.round(bare.at(-1)!)} ms, cold ${Math.round(cold.at(-1)!)} ms\n`,
      );
    }
  } finally {
    await pool.close();
    gw.close();
  }
  const p = (xs: number[], q: number) => percentile(xs, q);
  const rows = [
    {
      what: "ready from the pool (fork + adopt)",
      p50Ms: p(pooled, 50),
      p99Ms: p(pooled, 99),
      bareP50Ms: p(bare, 50),
      bareP99Ms: p(bare, 99),
      "ratio p50": p(pooled, 50) / p(bare, 50),
      "ratio p99": p(pooled, 99) / p(bare, 99),
      goal: "p50 ≤ 0.10×, p99 ≤ 0.25×",
    },
    {
      what: "cold ready (fork + sandbox + core)",
      p50Ms: p(cold, 50),
      p99Ms: p(cold, 99),
      bareP50Ms: p(bare, 50),
      bareP99Ms: p(bare, 99),
      "ratio p50": p(cold, 50) / p(bare, 50),
      "ratio p99": p(cold, 99) / p(bare, 99),
      goal: "≤ 1.05×",
    },
  ];
  console.log(`\nwarm pool vs bare cline-core boot (${reps} alternating reps)`);
  printTable(rows);
  return { rows, pooledMs: pooled, bareMs: bare, coldMs: cold };
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const sizes = arg(args, "sizes", "10,100,1000").split(",").map(Number);
  const only = new Set(arg(args, "only", "fork,overhead,agent,pool").split(","));
  const root = await mkdtemp(join(tmpdir(), "flakegym-bench-sandbox-"));
  const result: Record<string, unknown> = {};
  try {
    // 1. fork time
    if (only.has("fork")) await forkSection(root, sizes, result);
    const lower = join(root, "small");
    await makeRepo(lower, 1);
    if (only.has("overhead")) await overheadSection(root, lower, result);
    // 2b/3. with the Cline core
    if (only.has("agent")) {
      result.agent = await agentBench(
        root,
        lower,
        Number(arg(args, "workers", "3")),
        Number(arg(args, "reps", "3")),
      );
    }
    // 4. the warm pool
    if (only.has("pool")) result.pool = await poolBench(root, lower, Number(arg(args, "pool-reps", "10")));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  ctx.writeResult("sandbox", result);
}

async function forkSection(root: string, sizes: number[], result: Record<string, unknown>): Promise<void> {
  const methods = await availableForkMethods(root);
  console.log(`fork methods available here: ${methods.join(", ")}`);
  const forkRows: Record<string, string | number>[] = [];
  for (const mb of sizes) {
    const lower = join(root, `repo-${mb}`);
    process.stdout.write(`creating a ${mb} MB synthetic repo… `);
    await makeRepo(lower, mb);
    console.log("done");
    for (const method of methods) {
      const reps = method === "copy" && mb >= 1000 ? 3 : 7;
      const times: number[] = [];
      for (let i = 0; i < reps; i++) {
        const fork = await forkTree(lower, {
          dest: join(root, `fork-${mb}-${method}-${i}`),
          method,
          quotaMb: mb + 256,
        });
        times.push(fork.forkMs);
        await fork.release();
      }
      forkRows.push({
        sizeMb: mb,
        method,
        medianMs: median(times),
        maxMs: Math.max(...times),
        goal: "≤ 50 ms",
        met: median(times) <= 50 ? "yes" : "no",
      });
    }
    await rm(lower, { recursive: true, force: true });
  }
  console.log("\nfork time per method");
  printTable(forkRows);
  result.fork = forkRows;
}

/** 2a. sandbox overhead without the core: worker start + first exec vs the bare command. */
async function overheadSection(root: string, lower: string, result: Record<string, unknown>): Promise<void> {
  const backend = createLocalBackend({ stateDir: join(root, "workers") });
  const sandboxed: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now();
    const fork = await forkTree(lower, { dest: join(root, `f-${i}`), quotaMb: 64 });
    const worker = await backend.start({
      runId: "bench",
      taskId: "bench",
      trajectoryId: String(i),
      profile: "c",
      workspace: join(fork.tree, "workspace"),
      gateway: {},
      limits: { memoryMb: 512, pids: 256, cpuSeconds: 60, diskMb: 64, wallClockMs: 60_000 },
      agent: false,
    });
    await worker.exec("true");
    sandboxed.push(performance.now() - t0);
    await worker.stop();
    await fork.release();
    const t1 = performance.now();
    await runSandboxed(
      { bwrap: undefined, rlimits: {} },
      ["true"],
      { timeoutMs: 10_000, hostCwd: lower },
      { PATH: "/usr/bin:/bin" },
    );
    bare.push(performance.now() - t1);
  }
  const overhead = [
    {
      what: "fork + sandboxed worker + first exec",
      medianMs: median(sandboxed),
      baseline: "bare `true` spawn",
      baselineMs: median(bare),
      extraMs: median(sandboxed) - median(bare),
    },
  ];
  console.log("\nsandbox overhead (no core)");
  printTable(overhead);
  result.sandboxOverhead = overhead;
}
