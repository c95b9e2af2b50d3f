/**
 * `npm run bench -- cline [--runs N]`: the Cline core's start and task costs, ours vs the baseline
 * side by side in one run.
 *
 * 1. start: bare `cline-host` + `node cline-core.js` spawned directly → first successful gRPC call
 *    (polled with a fresh channel every 20 ms, the fastest a caller can notice), vs our
 *    launchClineCore (supervisor, clean env, readiness by a real call). Runs alternate; medians.
 *    Goal: ours ≤ 1.05 × bare.
 * 2. a two-turn task (write a file, complete) with our ask handling vs Cline's auto-approve-all
 *    ("yolo", which sleeps 3.5 s after every edit).
 * 3. RSS per instance after tasks.
 * 4. 1/2/4 instances started at once: per-instance ready time.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ClineCore,
  createClineClient,
  launchClineCore,
  resolveClinePackage,
  runClineTask,
  startScriptedOpenAiServer,
  xmlTool,
} from "@flakegym/cline-vendor";
import { type BenchContext, median, printTable } from "./lib.js";

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const a = srv.address();
      srv.close(() => (a && typeof a === "object" ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

async function freshDirs(root: string, name: string) {
  const d = {
    workspace: join(root, name, "ws"),
    configDir: join(root, name, "config"),
    home: join(root, name, "home"),
  };
  await mkdir(d.workspace, { recursive: true });
  await mkdir(d.home, { recursive: true });
  return d;
}

/** Baseline: spawn host + core by hand (as FACTS §2 documents), time to the first answered call. */
async function bareStart(root: string, name: string): Promise<number> {
  const pkg = resolveClinePackage();
  const d = await freshDirs(root, name);
  const [hostPort, corePort] = await Promise.all([freePort(), freePort()]);
  const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: d.home };
  const t0 = performance.now();
  const procs: ChildProcess[] = [
    spawn(pkg.hostBinary, ["--port", String(hostPort), "--workspace", d.workspace], {
      env,
      stdio: "ignore",
      detached: true,
    }),
    spawn(
      process.execPath,
      [
        pkg.coreJs,
        "--port",
        String(corePort),
        "--host-bridge-port",
        String(hostPort),
        "--config",
        d.configDir,
      ],
      {
        env: { ...env, NODE_PATH: `${pkg.nodeModules}:${pkg.fakeNodeModules}` },
        stdio: "ignore",
        detached: true,
      },
    ),
  ];
  try {
    for (;;) {
      if (performance.now() - t0 > 120_000) throw new Error("bare core did not answer within 120 s");
      const client = createClineClient({
        address: `127.0.0.1:${corePort}`,
        descriptorSet: pkg.descriptorSet,
      });
      try {
        await client.state.getProcessInfo({ deadlineMs: 500 });
        return performance.now() - t0;
      } catch {
        await new Promise((r) => setTimeout(r, 20));
      } finally {
        client.close();
      }
    }
  } finally {
    for (const p of procs) {
      try {
        process.kill(-p.pid!, "SIGKILL");
      } catch {
        // gone
      }
    }
  }
}

async function oursStart(root: string, name: string): Promise<{ ms: number; core: ClineCore }> {
  const d = await freshDirs(root, name);
  const t0 = performance.now();
  const core = await launchClineCore({ ...d, startTimeoutMs: 120_000 });
  return { ms: performance.now() - t0, core };
}

async function twoTurnTask(core: ClineCore, yolo: boolean, i: number): Promise<number> {
  const file = `f-${yolo ? "yolo" : "ours"}-${i}.txt`;
  const policy = await startScriptedOpenAiServer({
    turns: [{ text: xmlTool.writeToFile(file, "x") }, { text: xmlTool.attemptCompletion("done") }],
  });
  try {
    const run = await runClineTask({
      client: core.client,
      prompt: `Create ${file}.`,
      provider: { kind: "openai", baseUrl: policy.baseUrl, modelId: "bench" },
      autoApproveAll: yolo,
      limits: { idleMs: 60_000 },
    });
    if (run.outcome.kind !== "completed")
      throw new Error(`task ended ${run.outcome.kind}: ${run.outcome.detail}`);
    return run.timings.totalMs;
  } finally {
    await policy.close();
  }
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const runsIdx = args.indexOf("--runs");
  const runs = runsIdx >= 0 ? Number(args[runsIdx + 1]) : 5;
  if (!Number.isInteger(runs) || runs < 1)
    throw new Error(`--runs '${args[runsIdx + 1]}': expected a positive integer`);
  const root = await mkdtemp(join(tmpdir(), "flakegym-bench-cline-"));
  try {
    // 1. start: alternate bare and ours
    const bare: number[] = [];
    const ours: number[] = [];
    for (let i = 0; i < runs; i++) {
      bare.push(await bareStart(root, `bare-${i}`));
      const o = await oursStart(root, `ours-${i}`);
      ours.push(o.ms);
      await o.core.stop();
      console.log(
        `start run ${i + 1}/${runs}: bare ${bare[i]!.toFixed(0)} ms, ours ${ours[i]!.toFixed(0)} ms`,
      );
    }

    // 2 + 3. two-turn task, ours vs yolo, on one core; then its RSS
    const { core } = await oursStart(root, "tasks");
    const taskOurs: number[] = [];
    const taskYolo: number[] = [];
    let rss: { coreRssBytes?: number; hostRssBytes?: number } = {};
    try {
      const taskRuns = Math.max(3, Math.min(runs, 5));
      for (let i = 0; i < taskRuns; i++) {
        taskOurs.push(await twoTurnTask(core, false, i));
        taskYolo.push(await twoTurnTask(core, true, i));
        console.log(`task run ${i + 1}/${taskRuns}: ours ${taskOurs[i]} ms, yolo ${taskYolo[i]} ms`);
      }
      rss = await core.memory();
    } finally {
      await core.stop();
    }

    // 4. concurrent starts
    const concurrent: { instances: number; medianReadyMs: number; maxReadyMs: number }[] = [];
    for (const k of [1, 2, 4]) {
      const started = await Promise.all(
        Array.from({ length: k }, (_, j) => oursStart(root, `conc-${k}-${j}`)),
      );
      const times = started.map((s) => s.ms);
      await Promise.all(started.map((s) => s.core.stop()));
      concurrent.push({ instances: k, medianReadyMs: median(times), maxReadyMs: Math.max(...times) });
      console.log(`${k} at once: ${times.map((t) => t.toFixed(0)).join(", ")} ms`);
    }

    const startRatio = median(ours) / median(bare);
    const taskRatio = median(taskOurs) / median(taskYolo);
    console.log("");
    printTable([
      {
        measure: "start → first gRPC answer (ms, median)",
        baseline: median(bare),
        ours: median(ours),
        ratio: startRatio,
      },
      {
        measure: "two-turn task (ms, median): ours vs yolo",
        baseline: median(taskYolo),
        ours: median(taskOurs),
        ratio: taskRatio,
      },
    ]);
    console.log("");
    printTable(
      concurrent.map((c) => ({
        instances: c.instances,
        "median ready ms": c.medianReadyMs,
        "max ready ms": c.maxReadyMs,
      })),
    );
    const mb = (b?: number) => (b === undefined ? "n/a" : `${(b / 1024 / 1024).toFixed(0)} MB`);
    console.log(
      `\nRSS per instance after ${taskOurs.length + taskYolo.length} tasks: core ${mb(rss.coreRssBytes)}, host ${mb(rss.hostRssBytes)}`,
    );
    console.log(
      `start goal (ours ≤ 1.05 × bare): ${startRatio <= 1.05 ? "met" : "NOT met"} (${startRatio.toFixed(3)})`,
    );
    ctx.writeResult("cline", {
      runs,
      start: {
        bareMs: bare,
        oursMs: ours,
        bareMedianMs: median(bare),
        oursMedianMs: median(ours),
        ratio: startRatio,
        goal: 1.05,
      },
      task: {
        oursMs: taskOurs,
        yoloMs: taskYolo,
        oursMedianMs: median(taskOurs),
        yoloMedianMs: median(taskYolo),
        ratio: taskRatio,
      },
      rss,
      concurrent,
    });
  } finally {
    await rm(root, { recursive: true, force: true, maxRetries: 3 });
  }
}
