/**
 * `npm run bench -- sandbox [--sizes 10,100,1000] [--workers 3]`
 *
 * 1. Fork time per method (reflink / overlay / copy, whichever work here) for synthetic repos of
 *    10 MB, 100 MB and 1 GB. Goal: ≤ 50 ms and flat in size where reflink/overlay is available.
 * 2. Sandbox overhead: a sandboxed worker's start + first exec vs the same command run bare, and
 *    — when the Cline core is available (cline-vendor's launchClineCore) — worker ready time
 *    (fork + sandbox + host + core) vs a bare cline-core start in the same run (goal ≤ 1.15×).
 * 3. Idle-ready workers per 24 GiB: RSS of a few idle workers, extrapolated (labelled as such;
 *    goal ≥ 24). Needs the core.
 */
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { availableForkMethods, createLocalBackend, forkTree } from "../packages/runner/src/index.js";
import { runSandboxed } from "../packages/runner/src/workers/local/sandbox.js";
import { type BenchContext, median, printTable } from "./lib.js";

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

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const sizes = arg(args, "sizes", "10,100,1000").split(",").map(Number);
  const root = await mkdtemp(join(tmpdir(), "flakegym-bench-sandbox-"));
  const result: Record<string, unknown> = {};
  try {
    // 1. fork time
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

    // 2a. sandbox overhead without the core: worker start + first exec vs the bare command
    const lower = join(root, "small");
    await makeRepo(lower, 1);
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

    // 2b/3. with the Cline core, when cline-vendor provides it
    const vendor = (await import("@flakegym/cline-vendor")) as Record<string, unknown>;
    if (typeof vendor.launchClineCore !== "function") {
      const why =
        "cline-vendor has no launchClineCore yet: worker-ready vs bare-core and RSS per worker not measured";
      console.log(`\n${why}`);
      result.agent = { skipped: why };
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
  ctx.writeResult("sandbox", result);
}
