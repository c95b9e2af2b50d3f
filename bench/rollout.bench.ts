/**
 * `npm run bench -- rollout [--n 8] [--concurrency 2] [--task <id>]`: one group of N scripted
 * trajectories end to end through flakegym (snapshot cached, forks, sandboxed workers, gateway,
 * scoring in fresh forks, outputs) against N bare cline-core runs of the same turns (no sandbox,
 * no gateway, no scoring: a plain copy of the workspace, the core, a scripted OpenAI server), same
 * concurrency, in the same process run. Goal: ours ≤ 1.3× bare.
 *
 * The same group with the warm pool (`--pool <size>`, default the concurrency) against the same
 * bare runs: goal ≤ 0.6×; and trajectories per core-minute (CPU time of this process and every
 * process it started and reaped, from /proc/self/stat) with and without the pool.
 */

import { readFileSync } from "node:fs";
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  launchClineCore,
  runClineTask,
  type ScriptedTurn,
  startScriptedOpenAiServer,
  xmlTool,
} from "@flakegym/cline-vendor";
import { createReporter } from "../packages/runner/src/progress/reporter.js";
import { runRollout } from "../packages/runner/src/rollout/run-rollout.js";
import type { RunConfig } from "../packages/runner/src/rollout/schema.js";
import { createSemaphore } from "../packages/runner/src/rollout/semaphore.js";
import { createRolloutDeps } from "../packages/runner/src/rollout/wire.js";
import { buildSnapshot, snapshotSpecOfTask } from "../packages/runner/src/snapshots/build.js";
import { loadTask } from "../packages/runner/src/tasks/catalog.js";
import { type BenchContext, median, printTable } from "./lib.js";

function flag(args: string[], name: string, dflt: string): string {
  const i = args.indexOf(`--${name}`);
  return i !== -1 && args[i + 1] ? args[i + 1]! : dflt;
}

/** The scripted turns both sides replay: look at the code, write a file, finish. */
function turns(): ScriptedTurn[] {
  return [
    { text: `Let me look at the project.\n${xmlTool.executeCommand("ls src")}` },
    { text: `I'll add a note.\n${xmlTool.writeToFile("NOTES.md", "# notes\n\nbenchmark run\n")}` },
    { text: xmlTool.attemptCompletion("added NOTES.md") },
  ];
}

/** CPU seconds used so far by this process and its reaped descendants (utime+stime+cutime+cstime). */
function treeCpuSeconds(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields 14–17 of proc(5) are at 11–14 after the command name
  const ticks = [11, 12, 13, 14].reduce((a, i) => a + Number(f[i]), 0);
  return ticks / 100; // USER_HZ is 100 on Linux
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const n = Number(flag(args, "n", "8"));
  const concurrency = Number(flag(args, "concurrency", "2"));
  const taskId = flag(args, "task", "semver-lite-caret-zero");
  const poolSize = Number(flag(args, "pool", String(concurrency)));
  const scratch = await mkdtemp(join(tmpdir(), "flakegym-bench-rollout-"));
  const signal = new AbortController().signal;
  try {
    const task = await loadTask(taskId);
    console.log(`bench rollout: ${n} scripted trajectories of ${taskId}, concurrency ${concurrency}`);
    const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { signal });
    console.log(`snapshot ${snapshot.key.slice(0, 12)} (${snapshot.cached ? "cached" : "built"})`);

    // ours: the whole pipeline (the snapshot is cached now, as in any run after the first)
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
    const runOurs = async (name: string, pool?: { size: number; idleMs: number }) => {
      const out = join(scratch, name);
      const deps = await createRolloutDeps(config, {
        runId: "bench",
        signal,
        env: process.env,
        ...(pool ? { pool, onNote: (m) => console.log(`  ${m}`) } : {}),
      });
      const reporter = createReporter(process.stderr, { live: false });
      const cpu0 = treeCpuSeconds();
      const t0 = performance.now();
      let result: Awaited<ReturnType<typeof runRollout>>;
      try {
        result = await runRollout({
          out,
          resume: false,
          config,
          runId: "bench",
          deps,
          progress: () => {},
          signal,
        });
      } finally {
        reporter.close();
        await deps.close(); // the pool's idle workers stop here: their CPU counts too
      }
      const ms = performance.now() - t0;
      const cpuS = treeCpuSeconds() - cpu0;
      const metrics = (await readFile(join(out, "metrics.jsonl"), "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Record<string, number>);
      return { result, ms, cpuS, metrics };
    };
    const plain = await runOurs("run");
    const ours = plain.result;
    const oursMs = plain.ms;
    const metrics = plain.metrics;
    const pooled = await runOurs("run-pool", { size: poolSize, idleMs: 120_000 });

    // bare: a copy of the workspace, the core unsandboxed, a scripted server per trajectory
    const sem = createSemaphore(concurrency);
    const bareRuns: { bootMs: number; agentMs: number; outcome: string }[] = [];
    const bareCpu0 = treeCpuSeconds();
    const t1 = performance.now();
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        sem.with(signal, async () => {
          const dir = join(scratch, `bare-${i}`);
          const workspace = join(dir, "workspace");
          await mkdir(dir, { recursive: true });
          await cp(snapshot.workspace, workspace, { recursive: true });
          const server = await startScriptedOpenAiServer({ turns: turns() });
          const tb = performance.now();
          const core = await launchClineCore({
            workspace,
            configDir: join(dir, "config"),
            home: join(dir, "home"),
          });
          const bootMs = performance.now() - tb;
          try {
            const run = await runClineTask({
              client: core.client,
              prompt: task.spec.prompt,
              provider: { kind: "openai", baseUrl: server.baseUrl, modelId: "flakegym-scripted" },
              limits: { wallClockMs: 300_000, maxModelRequests: 20 },
            });
            bareRuns.push({ bootMs, agentMs: run.timings.totalMs, outcome: run.outcome.kind });
          } finally {
            await core.stop();
            await server.close();
          }
        }),
      ),
    );
    const bareMs = performance.now() - t1;
    const bareCpuS = treeCpuSeconds() - bareCpu0;

    const okOurs = ours.summary.trajectories.outcomes.completed;
    const okBare = bareRuns.filter((r) => r.outcome === "completed").length;
    const col = (k: string) => median(metrics.map((m) => m[k] ?? 0));
    printTable([
      {
        what: `flakegym group of ${n}`,
        "wall s": oursMs / 1000,
        completed: `${okOurs}/${n}`,
        "boot ms (med)": col("boot_ms"),
        "agent ms (med)": col("agent_ms"),
        "fork ms (med)": col("fork_ms"),
        "score ms (med)": col("score_ms"),
      },
      {
        what: `flakegym group of ${n}, pool ${poolSize}`,
        "wall s": pooled.ms / 1000,
        completed: `${pooled.result.summary.trajectories.outcomes.completed}/${n}`,
        "boot ms (med)": median(pooled.metrics.map((m) => m.boot_ms ?? 0)),
        "agent ms (med)": median(pooled.metrics.map((m) => m.agent_ms ?? 0)),
        "fork ms (med)": median(pooled.metrics.map((m) => m.fork_ms ?? 0)),
        "score ms (med)": median(pooled.metrics.map((m) => m.score_ms ?? 0)),
      },
      {
        what: `bare cline-core × ${n}`,
        "wall s": bareMs / 1000,
        completed: `${okBare}/${n}`,
        "boot ms (med)": median(bareRuns.map((r) => r.bootMs)),
        "agent ms (med)": median(bareRuns.map((r) => r.agentMs)),
        "fork ms (med)": 0,
        "score ms (med)": 0,
      },
    ]);
    const ratio = oursMs / bareMs;
    console.log(`\nratio ours / bare: ${ratio.toFixed(2)}× (goal ≤ 1.30×)`);
    const poolRatio = pooled.ms / bareMs;
    const onPool = pooled.metrics.filter(
      (m) => (m as { pooled_worker?: boolean }).pooled_worker === true,
    ).length;
    console.log(
      `ratio ours with the pool / bare: ${poolRatio.toFixed(2)}× (goal ≤ 0.60×; ${onPool}/${n} on pooled workers)`,
    );
    const perCoreMin = (cpuS: number) => n / (cpuS / 60);
    const throughput = [
      { what: "no pool", "cpu s": plain.cpuS, "trajectories per core-minute": perCoreMin(plain.cpuS) },
      {
        what: `pool ${poolSize}`,
        "cpu s": pooled.cpuS,
        "trajectories per core-minute": perCoreMin(pooled.cpuS),
      },
      { what: "bare cline-core", "cpu s": bareCpuS, "trajectories per core-minute": perCoreMin(bareCpuS) },
    ];
    console.log("\ntrajectories per core-minute (CPU time of this process tree)");
    console.log(
      "caveat: sandboxed workers' processes are SIGKILLed through their cgroup and not reaped into this\n" +
        "process's cutime, so the flakegym rows undercount their CPU; compare pool vs no pool only",
    );
    printTable(throughput);
    ctx.writeResult("rollout", {
      n,
      concurrency,
      taskId,
      oursMs,
      bareMs,
      ratio,
      pool: {
        size: poolSize,
        ms: pooled.ms,
        ratio: poolRatio,
        onPooledWorkers: onPool,
        completed: pooled.result.summary.trajectories.outcomes.completed,
        metrics: pooled.metrics,
      },
      throughput,
      completed: { ours: okOurs, bare: okBare },
      oursMetrics: metrics,
      bare: bareRuns,
    });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
