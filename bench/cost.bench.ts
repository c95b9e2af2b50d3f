/**
 * `npm run bench -- cost [--parts boot,pss,sandbox,gateway,rollout] [--reps 3] [flags]` (issue 32):
 * what a trajectory costs in CPU time and memory, ours beside a baseline in one run, each part
 * printing both, the ratio and the load average. CPU time, not wall time: on a shared, loaded
 * machine CPU-seconds and PSS are what can be measured honestly, and what decides how many agents a
 * node holds.
 *
 * - boot — CPU of one worker from spawn to the core's first gRPC answer: the bare core (cline-core
 *   under its supervisor, as the product launched it before workers: /proc utime+stime of its
 *   process tree) vs the product's default worker launch (the local backend as `rollout` wires it:
 *   sandbox, cgroup, core; the worker's cgroup counter). `--reps` alternating pairs. Goal ≤ 0.25×.
 * - pss — PSS per idle-ready worker (smaps_rollup summed over the worker's processes, shared pages
 *   split among the sharers), `--pss-workers` of them booted as the warm pool keeps them, vs as many
 *   bare cores. Goal ≤ 150 MiB.
 * - sandbox — a sandbox created, one command answered, destroyed, `--sandbox-reps` in a row
 *   (bubblewrap: the local backend's exec-only worker; podman: the podman backend's), p50/p99,
 *   beside a plain process spawn of the same command.
 * - gateway — the policy gateway's CPU per call vs a minimal pass-through proxy
 *   (bench/gateway/passthrough.ts) on the same calls, and the 1-stream p50 latency it adds: the
 *   gateway bench's machinery (`--gateway-calls` per target; burst = CPU per byte at its worst,
 *   paced = decode steps of `--interval-ms`). Goal ≤ 1.25× and ≤ 2 ms.
 * - rollout — the product's default (the warm pool, `--reuse` the product's default unless given)
 *   vs bare cores (each trajectory boots its own core) running the same turns: the rollout bench's
 *   machinery, the whole run's CPU from a cgroup of its own (runner, gateway, workers, scorers).
 *   CPU per trajectory while the group runs (the runner in this process, its pool warmed before the
 *   group; goal ≤ 0.5×) and trajectories per core-minute over the whole run of the installed
 *   `flakegym rollout` (its bundle, a child process: what users run; goal ≥ 2×), the in-process
 *   runner's beside it. `--n` trajectories, `--reps`.
 * - cli — `flakegym --help` CPU, the installed bin vs the same CLI from its sources. Goal ≤ 0.3 s.
 *
 * Default parts: rollout, pss, cli. The last line (issue 47):
 * `cost: traj-cpu <ratio>x traj/core-min <ratio>x pss <MiB> MiB cli-start <s> s` (`n/a` for a part
 * not run). Quick form: npm run bench -- cost --reps 1 --pss-workers 2 --n 4 --cli-reps 3
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { clineAgentLauncher } from "../packages/runner/src/workers/local/cline-agent.js";
import { createLocalBackend } from "../packages/runner/src/workers/local/local-backend.js";
import {
  createPodmanBackend,
  hostToolchainPodmanOptions,
} from "../packages/runner/src/workers/podman/podman-backend.js";
import { REUSE_DEFAULT } from "../packages/runner/src/workers/pool/reuse.js";
import type { PoolableBackend } from "../packages/runner/src/workers/pool/types.js";
import type { WorkerBackend, WorkerSpec } from "../packages/runner/src/workers/types.js";
import { processTrees, treeMemory } from "./concurrency/memory.js";
import {
  type CostArgs,
  type CostSummary,
  costLine,
  costSideOrder,
  parseCostArgs,
  perRepLines,
  perRepRatios,
} from "./cost/summary.js";
import { cpuRatios, main as gatewayMain, PASSTHROUGH } from "./gateway.bench.js";
import {
  alternating,
  type BenchContext,
  launchBareCore,
  loadStr,
  median,
  percentile,
  printTable,
  procCpuSeconds,
} from "./lib.js";
import { type Measure, measureRolloutSides, type Side } from "./rollout.bench.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const o = parseCostArgs(args);
  console.log(`bench cost: ${new Date().toISOString()}, parts ${o.parts.join(",")}, load ${loadStr()}`);
  const root = await mkdtemp(join(tmpdir(), "flakegym-bench-cost-"));
  const summary: CostSummary = {};
  const result: Record<string, unknown> = { options: o };
  const gw = await gatewaySocket(root);
  try {
    for (const part of o.parts) {
      console.log(`\n== ${part} (load ${loadStr()})`);
      const r = await runPart(ctx, part, o, root, gw.path);
      result[part] = r.detail;
      Object.assign(summary, r.summary);
    }
  } finally {
    gw.server.close();
    await rm(root, { recursive: true, force: true });
  }
  result["summary"] = summary;
  result["loadEnd"] = loadStr();
  ctx.writeResult("cost", result);
  console.log(costLine(summary));
}

type PartResult = { detail: unknown; summary: CostSummary };

function runPart(
  ctx: BenchContext,
  part: CostArgs["parts"][number],
  o: CostArgs,
  root: string,
  gatewayPath: string,
): Promise<PartResult> {
  switch (part) {
    case "boot":
      return bootPart(join(root, "boot"), o.reps, gatewayPath);
    case "pss":
      return pssPart(join(root, "pss"), o.pssWorkers, gatewayPath);
    case "sandbox":
      return sandboxPart(join(root, "sandbox"), o.sandboxReps);
    case "gateway":
      return gatewayPart(ctx, o);
    case "rollout":
      return rolloutPart(o);
    case "cli":
      return cliPart(o.cliReps);
  }
}

/** A unix socket standing in for the gateway: idle workers never call it. */
async function gatewaySocket(root: string): Promise<{ server: Server; path: string }> {
  const path = join(root, "gateway.sock");
  const server = createServer((s) => s.end());
  await new Promise<void>((r) => server.listen(path, r));
  return { server, path };
}

/** The product's default local backend, as `rollout` wires it (rollout/wire-backend.ts). */
function productBackend(stateDir: string): PoolableBackend {
  return createLocalBackend({ stateDir, agent: clineAgentLauncher({ startTimeoutMs: 300_000 }) });
}

async function agentSpec(root: string, id: string, gatewayPath: string): Promise<WorkerSpec> {
  const ws = join(root, "ws", id);
  await mkdir(ws, { recursive: true });
  await writeFile(join(ws, "README.md"), "idle worker\n");
  return {
    runId: "bench-cost",
    taskId: "idle",
    trajectoryId: id,
    profile: "node",
    workspace: ws,
    gateway: { socketPath: gatewayPath },
    limits: { memoryMb: 2048, pids: 512, cpuSeconds: 3600, diskMb: 256, wallClockMs: 3_600_000 },
    agent: true,
  };
}

/** A bare core (no sandbox, no worker): spawn → first gRPC answer, as the product did before. */
async function bareCore(root: string, id: string) {
  // as the product did before: no same-page merging either (the default launch now merges)
  const core = await launchBareCore(join(root, `bare-${id}`), {
    startTimeoutMs: 300_000,
    memoryMerge: false,
  });
  const pids = [...new Set([core.pid, ...Object.values(core.childPids)])];
  return { core, configDir: core.configDir, cpuS: procCpuSeconds(pids), bootMs: core.timings.bootMs };
}

async function bootPart(root: string, reps: number, gatewayPath: string): Promise<PartResult> {
  const backend = productBackend(join(root, "w"));
  const bare: number[] = [];
  const ours: number[] = [];
  const wall: { bare: number[]; ours: number[] } = { bare: [], ours: [] };
  const once = async (side: "bare" | "ours", rep: number) => {
    if (side === "bare") {
      const b = await bareCore(root, String(rep));
      await b.core.stop();
      bare.push(b.cpuS);
      wall.bare.push(b.bootMs);
      return `bare ${b.cpuS.toFixed(2)} s`;
    }
    const t0 = performance.now();
    const w = await backend.start(await agentSpec(root, `boot-${rep}`, gatewayPath));
    const ms = performance.now() - t0;
    const cpu = await w.cpuSeconds?.();
    await w.stop();
    if (cpu === undefined) throw new Error("bench cost: the local backend measured no CPU (no cgroup here?)");
    ours.push(cpu);
    wall.ours.push(ms);
    return `ours ${cpu.toFixed(2)} s`;
  };
  for (let rep = 0; rep < reps; rep++) {
    const order = rep % 2 === 0 ? (["bare", "ours"] as const) : (["ours", "bare"] as const);
    const said = [await once(order[0], rep), await once(order[1], rep)];
    console.log(`  rep ${rep + 1}/${reps}: ${said.join(", ")} (load ${loadStr()})`);
  }
  const ratio = median(ours) / median(bare);
  printTable([
    {
      what: "bare cline-core (process tree, /proc)",
      "CPU s p50": median(bare),
      "wall ms p50": median(wall.bare),
    },
    { what: "product worker (its cgroup)", "CPU s p50": median(ours), "wall ms p50": median(wall.ours) },
  ]);
  console.log(`boot CPU, ours / bare: ${ratio.toFixed(2)}× (goal ≤ 0.25×; load ${loadStr()})`);
  return { detail: { bare, ours, wall, ratio, load: loadStr() }, summary: { bootCpuRatio: ratio } };
}

/**
 * `k` idle-ready workers as the warm pool keeps them (`backend.boot`: booted, collected at ready,
 * waiting for a trajectory), then as many bare cores; PSS of each one's process tree 3 s after
 * all are up. Shared pages (file-backed code, the mapped bundle source) are split among the
 * `k` sharers, so `--pss-workers` should be the number of idle workers a pool keeps.
 */
async function pssPart(root: string, k: number, gatewayPath: string): Promise<PartResult> {
  const backend = productBackend(join(root, "w"));
  const workers: { id: string; stop(): Promise<void> }[] = [];
  const cores: Awaited<ReturnType<typeof bareCore>>[] = [];
  try {
    const started = await Promise.allSettled(
      Array.from({ length: k }, async (_, i) =>
        workers.push(await backend.boot(await agentSpec(root, `pss-${i}`, gatewayPath))),
      ),
    );
    const failed = started.filter((s) => s.status === "rejected");
    if (failed.length > 0)
      throw new Error(
        `bench cost: ${failed.length}/${k} workers did not start: ${String((failed[0] as PromiseRejectedResult).reason)}`,
      );
    await sleep(3000);
    const oursByKind = await kindsOf(workers.map((w) => w.id));
    const ours = oursByKind.map((m) => m.pssMb);
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    cores.push(...(await Promise.all(Array.from({ length: k }, (_, i) => bareCore(root, `pss-${i}`)))));
    await sleep(3000);
    const bare = (await kindsOf(cores.map((c) => c.configDir))).map((m) => m.pssMb);
    printTable([
      { what: `bare cline-core × ${k}`, "PSS MiB p50": median(bare), "PSS MiB max": Math.max(...bare) },
      {
        what: `product idle-ready worker × ${k} (warm pool)`,
        "PSS MiB p50": median(ours),
        "PSS MiB max": Math.max(...ours),
      },
    ]);
    const byKind = Object.entries(oursByKind[0]?.pssByKindMb ?? {})
      .map(([kind, mb]) => `${kind} ${mb.toFixed(0)}`)
      .join(", ");
    const ratio = median(ours) / median(bare);
    console.log(
      `PSS per idle-ready worker: ${median(ours).toFixed(0)} MiB (one of them by process: ${byKind}), ${ratio.toFixed(2)}× a bare core (goal ≤ 150 MiB; load ${loadStr()})`,
    );
    return {
      detail: { k, ours, bare, oursByKind, ratio, load: loadStr() },
      summary: { pssMiB: median(ours) },
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop().catch(() => undefined)));
    await Promise.all(cores.map((c) => c.core.stop().catch(() => undefined)));
  }
}

/** Memory of each process tree whose command line holds one of `needles` (a worker's id, a core's config dir). */
async function kindsOf(needles: readonly string[]) {
  const trees = await processTrees(needles);
  return Promise.all(needles.map((d) => treeMemory(trees.get(d) ?? [])));
}

const EXEC_ONLY = (workspace: string, id: string): WorkerSpec => ({
  runId: "bench-cost",
  taskId: "sandbox",
  trajectoryId: id,
  profile: "c",
  workspace,
  gateway: {},
  limits: { memoryMb: 512, pids: 256, cpuSeconds: 60, wallClockMs: 120_000 },
  agent: false,
});

/** `reps` times in a row: a sandbox made, `echo ok` answered, the sandbox gone; ms each. */
async function sandboxRow(root: string, backend: WorkerBackend, reps: number): Promise<number[]> {
  const ms: number[] = [];
  for (let i = 0; i < reps; i++) {
    const ws = join(root, `ws-${i}`);
    await mkdir(ws, { recursive: true });
    const t0 = performance.now();
    const w = await backend.start(EXEC_ONLY(ws, `${backend.kind}-${i}`));
    try {
      const r = await w.exec("echo ok");
      if (r.stdout.trim() !== "ok")
        throw new Error(`bench cost: ${backend.kind} sandbox answered ${JSON.stringify(r)}`);
    } finally {
      await w.stop();
    }
    ms.push(performance.now() - t0);
  }
  return ms;
}

async function sandboxPart(root: string, reps: number): Promise<PartResult> {
  const rows: Record<string, string | number>[] = [];
  const detail: Record<string, unknown> = {};
  const spawnMs: number[] = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await execa("/bin/sh", ["-c", "echo ok"], { timeout: 30_000 });
    spawnMs.push(performance.now() - t0);
  }
  const row = (what: string, ms: number[]) => {
    rows.push({
      what,
      n: ms.length,
      "p50 ms": median(ms),
      "p99 ms": percentile(ms, 99),
      "× spawn p50": median(ms) / median(spawnMs),
      load1: loadStr().split(" ")[0]!,
    });
    detail[what] = ms;
  };
  row("plain process spawn", spawnMs);
  row(
    "bubblewrap (local backend)",
    await sandboxRow(join(root, "bwrap"), createLocalBackend({ stateDir: join(root, "bwrap-w") }), reps),
  );
  const podman = await execa("podman", ["info", "--format", "{{.Host.OCIRuntime.Name}}"], {
    reject: false,
    timeout: 60_000,
  });
  if (podman.exitCode === 0) {
    const backend = createPodmanBackend({
      ...hostToolchainPodmanOptions(),
      stateDir: join(root, "podman-w"),
    });
    row("podman (podman backend)", await sandboxRow(join(root, "podman"), backend, reps));
  } else
    console.log(
      `  podman skipped: \`podman info\` failed (${podman.stderr.trim().split("\n")[0] ?? podman.exitCode})`,
    );
  printTable(rows);
  return { detail: { ...detail, rows }, summary: {} };
}

async function gatewayPart(ctx: BenchContext, o: CostArgs): Promise<PartResult> {
  const out = await gatewayMain(ctx, [
    "--streams",
    "1",
    "--scenarios",
    "burst,paced",
    "--calls",
    String(o.gatewayCalls),
    "--interval-ms",
    String(o.intervalMs),
    "--core-streams",
    "off",
    "--passthrough",
  ]);
  const rows = out["rows"] as Record<string, string | number>[];
  const ratios = cpuRatios(rows, "gateway (thread)");
  const paced = rows.find((r) => r["upstream"] === "paced" && r["gateway"] === "gateway (thread)");
  const passP50 = rows.find((r) => r["upstream"] === "paced" && r["gateway"] === PASSTHROUGH);
  console.log(
    `gateway CPU per call / pass-through: ${ratios.map((r) => `${r.upstream} ${r.ratio.toFixed(2)}×`).join(", ")} (goal ≤ 1.25×); ` +
      `1-stream p50 added (paced): gateway ${Number(paced?.["added p50"]).toFixed(2)} ms, pass-through ${Number(passP50?.["added p50"]).toFixed(2)} ms (goal ≤ 2 ms; load ${loadStr()})`,
  );
  return {
    detail: { ratios, rows },
    // the worse of the two upstreams' ratios
    summary: { gatewayCpuRatio: Math.max(...ratios.map((r) => r.ratio)) },
  };
}

async function rolloutPart(o: CostArgs): Promise<PartResult> {
  const { all, counted } = await measureRolloutSides(
    {
      n: o.n,
      concurrency: o.concurrency,
      taskId: o.task,
      poolSize: o.concurrency,
      reps: o.reps,
      ...(o.reuse !== undefined ? { reuse: o.reuse } : {}),
    },
    ["pool", "bare", "cli"],
    costSideOrder,
  );
  const med = (side: Side, f: (m: Measure) => number) => median(all.filter((m) => m.side === side).map(f));
  const perCoreMin = (side: Side) => o.n / (med(side, (m) => m.cpuS) / 60);
  // steady state: the CPU while the group ran (the pool's warm-up boots and shutdown are outside it)
  const trajCpu = (side: "pool" | "bare") => med(side, (m) => m.groupCpuS) / o.n;
  const [ours, bare, cli] = [perCoreMin("pool"), perCoreMin("bare"), perCoreMin("cli")];
  const reuse = o.reuse ?? REUSE_DEFAULT;
  const label = (side: Side) =>
    side === "pool"
      ? `product in-process (warm pool, --reuse ${reuse})`
      : side === "cli"
        ? `product as installed (flakegym rollout, --pool ${o.concurrency} --reuse ${reuse})`
        : "bare cores (a core per trajectory)";
  printTable(
    all.map((m) => ({
      side: label(m.side),
      rep: m.rep + 1,
      "cpu s (whole run)": m.cpuS,
      "cpu s (group)": m.side === "cli" ? Number.NaN : m.groupCpuS,
      "of which runner s": m.selfCpuS,
      "agents s": m.agentsCpuS ?? (m.side === "bare" ? m.cpuS - m.selfCpuS : Number.NaN),
      "scorers s": m.scorersCpuS ?? 0,
      completed: `${m.completed}/${o.n}`,
      "pooled workers unused": m.retired ?? 0,
      load: m.loadAfter,
    })),
  );
  const trajCpuRatio = trajCpu("pool") / trajCpu("bare");
  console.log(
    `CPU per trajectory (group, in-process runner): ours ${trajCpu("pool").toFixed(2)} s vs bare ${trajCpu("bare").toFixed(2)} s = ${trajCpuRatio.toFixed(2)}× (goal ≤ 0.5×)`,
  );
  console.log(
    `trajectories per core-minute (whole run): as installed ${cli.toFixed(2)}, in-process ${ours.toFixed(2)}, bare ${bare.toFixed(2)}: ` +
      `${(cli / bare).toFixed(2)}× as installed, ${(ours / bare).toFixed(2)}× in-process (goal ≥ 2×; the last line's is the installed CLI's); CPU counted: ${counted}`,
  );
  const perRep = perRepRatios(all);
  console.log(
    `per rep (ours over the bare cores measured in the same rep; CPU time, so the load inflates both sides):\n${perRepLines(perRep).join("\n")}`,
  );
  return {
    detail: {
      all,
      perRep,
      counted,
      ours,
      bare,
      cli,
      reuse,
      trajCpu: { ours: trajCpu("pool"), bare: trajCpu("bare") },
    },
    // traj/core-min of what users run: the installed CLI (its bundle), its whole run
    summary: { trajCpuRatio, trajPerCoreMinRatio: cli / bare },
  };
}

/** User + system CPU seconds of `node <args>` (bash's `time` over the child), with its stdout's length. */
async function childCpuSeconds(args: readonly string[], env: Record<string, string>): Promise<number> {
  const quoted = args.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
  const r = await execa(
    "bash",
    ["-c", `TIMEFORMAT='%U %S'; { time ${JSON.stringify(process.execPath)} ${quoted} >/dev/null; } 2>&1`],
    {
      env: { ...process.env, ...env },
      timeout: 120_000,
    },
  );
  const [u, sy] = r.stdout.trim().split("\n").at(-1)!.split(" ").map(Number);
  if (!Number.isFinite(u) || !Number.isFinite(sy))
    throw new Error(`bench cost: could not read the CPU time of node ${args.join(" ")}: ${r.stdout}`);
  return u! + sy!;
}

/** `flakegym --help` CPU: the installed bin (its bundle) vs the same CLI from its sources (tsx), alternating. */
async function cliPart(reps: number): Promise<PartResult> {
  const bin = fileURLToPath(new URL("../packages/runner/bin/flakegym.js", import.meta.url));
  const { ours, base } = await alternating(
    reps,
    () => childCpuSeconds([bin, "--help"], {}),
    () => childCpuSeconds([bin, "--help"], { FLAKEGYM_FROM_SOURCE: "1" }),
  );
  printTable([
    {
      what: "flakegym --help (bundle, as installed)",
      "CPU s p50": median(ours),
      "CPU s max": Math.max(...ours),
    },
    { what: "flakegym --help from sources (tsx)", "CPU s p50": median(base), "CPU s max": Math.max(...base) },
  ]);
  console.log(
    `CLI start: ${median(ours).toFixed(2)} CPU-s, ${(median(ours) / median(base)).toFixed(2)}× from sources (goal ≤ 0.3 s; load ${loadStr()})`,
  );
  return { detail: { ours, base }, summary: { cliStartS: median(ours) } };
}
