/**
 * `npm run bench -- scoring [--reps 3] [--tasks a,b] [--against canary|decoys]`
 *
 * The cost of scoring one trajectory with decoys (issue 25: every graded test renamed and twinned
 * by a test that must fail) against the scorer before them (the canary only), side by side: for
 * one offline task per profile, the reference solution is scored alternately both ways in fresh
 * sandboxed forks of one snapshot. CPU seconds come from a cgroup of the bench's own (every
 * sandboxed scorer and compiler is charged there); wall time beside it. Goal: ≤ 1.5× CPU per
 * trajectory. `--against decoys` (issue 42): the scorer with externalized assertions against the
 * one with decoys only (the scorer before them), same goal. `--against workspace-first` (issue 42):
 * the production scorer with its test command demoted (scoring/demote.ts) against the same scorer
 * running the command as written. `--against one-user` (issue 42): the production scorer with the
 * agent's code run as a user of its own (the local backend's two-user scoring sandbox, a root
 * runner) against the same scorer with one user (`FLAKEGYM_SCORING_USERS=one`: sealed shells only).
 */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import {
  buildSnapshot,
  capabilitiesOf,
  createLocalBackend,
  forkSnapshot,
  hiddenTestsOf,
  loadTask,
  prepareReadOnlyHidden,
  scoreDiff,
  snapshotSpecOfTask,
} from "../packages/runner/src/index.js";
import { type BenchContext, median, printTable } from "./lib.js";
import { openRunCgroup } from "./run-cgroup.js";

const DEFAULT_TASKS = [
  "chunked-partial-tail",
  "paginate-last-page",
  "truncate-runes",
  "stats-empty-mean",
  "b64-two-byte-tail",
];

function arg(args: string[], name: string, fallback: string): string {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && args[i + 1] ? args[i + 1]! : fallback;
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const reps = Number(arg(args, "reps", "3"));
  const tasks = arg(args, "tasks", DEFAULT_TASKS.join(",")).split(",");
  const against = arg(args, "against", "canary");
  if (!["canary", "decoys", "workspace-first", "one-user"].includes(against))
    throw new Error(
      `--against ${against}: give canary (the scorer before decoys), decoys (before externalized assertions), workspace-first (before the demoted test command) or one-user (before the code ran as a user of its own)`,
    );
  const demoting = against === "workspace-first";
  // both sides the production scorer; only the users differ
  const users = against === "one-user";
  const cg = await openRunCgroup(`scoring-${process.pid}`);
  if ("reason" in cg) console.log(`CPU: not measured (${cg.reason}); wall time only`);
  const cpu = async () => ("reason" in cg ? Number.NaN : await cg.cpuSeconds());
  const rows: Record<string, string | number>[] = [];
  const [ourName, baseName] = users
    ? ["two users", "one user"]
    : demoting
      ? ["demoted", "workspace first"]
      : against === "decoys"
        ? ["externalized", "decoys only"]
        : ["decoys", "canary only"];
  const all: { ours: number[]; base: number[] } = { ours: [], base: [] };
  try {
    for (const id of tasks) {
      const task = await loadTask(id);
      const snapshot = await buildSnapshot(snapshotSpecOfTask(task), { cacheDir: join(ctx.outDir, "cache") });
      const hidden = await hiddenTestsOf(task, 120_000);
      const gold = await readFile(task.paths.solution, "utf8");
      const backend = createLocalBackend({ stateDir: join(ctx.outDir, "workers") });
      const one = async (decoys: boolean, n: number) => {
        if (users && !decoys) process.env.FLAKEGYM_SCORING_USERS = "one";
        else delete process.env.FLAKEGYM_SCORING_USERS;
        const c0 = await cpu();
        const t0 = performance.now();
        const fork = await forkSnapshot(snapshot, {
          dest: join(ctx.outDir, "forks", `${id}-${decoys}-${n}`),
        });
        // the baseline: no decoys (--against canary), or decoys without externalization (--against decoys)
        const prepared =
          decoys || against === "decoys" || users
            ? await prepareReadOnlyHidden(
                capabilitiesOf("local"),
                hidden,
                snapshot.workspace,
                undefined,
                undefined,
                {
                  externalize: decoys || demoting || users,
                },
              )
            : undefined;
        const worker = await backend.start({
          runId: "bench",
          taskId: id,
          trajectoryId: `${id}-${decoys ? "decoys" : "canary"}-${n}`,
          profile: task.spec.profile,
          workspace: fork.workspace,
          depsDir: fork.deps,
          gateway: {},
          limits: { ...task.spec.limits, wallClockMs: 300_000 },
          agent: false,
          ...(prepared?.readOnly ? { readOnlyFiles: prepared.readOnly.files } : {}),
        });
        try {
          const s = await scoreDiff(
            worker,
            gold,
            hidden,
            {
              partialCredit: "none",
              weights: { tests: 1, build: 0, lint: 0, judge: 0 },
              repeat: 1,
              termTimeoutMs: 60_000,
              taskPrompt: "",
              ...(prepared ? { bound: prepared.bound } : {}),
              ...(demoting && !decoys ? { workspaceFirst: true } : {}),
            },
            AbortSignal.timeout(280_000),
          );
          if (s.reward !== 1)
            throw new Error(
              `${id}: gold scored ${s.reward} (${s.gate?.detail ?? JSON.stringify([s.testResults ?? s.terms, s.testOutput]).slice(0, 3000)})`,
            );
          if (users && s.channel !== (decoys ? "apart" : "sealed"))
            throw new Error(`${id}: scored with channel ${s.channel}, not ${decoys ? "apart" : "sealed"}`);
        } finally {
          await worker.stop();
          await prepared?.readOnly?.release();
          await fork.release();
        }
        return { cpu: (await cpu()) - c0, wall: (performance.now() - t0) / 1000 };
      };
      await one(true, -1); // warm caches (compilers, page cache) before measuring
      const ours: { cpu: number; wall: number }[] = [];
      const base: { cpu: number; wall: number }[] = [];
      for (let n = 0; n < reps; n++) {
        // alternate which goes first
        if (n % 2 === 0) {
          ours.push(await one(true, n));
          base.push(await one(false, n));
        } else {
          base.push(await one(false, n));
          ours.push(await one(true, n));
        }
      }
      const oc = median(ours.map((x) => x.cpu));
      const bc = median(base.map((x) => x.cpu));
      all.ours.push(oc);
      all.base.push(bc);
      rows.push({
        task: id,
        profile: task.spec.profile,
        [`cpu s (${ourName})`]: oc,
        [`cpu s (${baseName})`]: bc,
        "cpu ratio": oc / bc,
        [`wall s (${ourName})`]: median(ours.map((x) => x.wall)),
        [`wall s (${baseName})`]: median(base.map((x) => x.wall)),
      });
    }
  } finally {
    if (!("reason" in cg)) await cg.close();
  }
  printTable(rows);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  const ratio = sum(all.ours) / sum(all.base);
  console.log(
    `\nscoring CPU per trajectory, ${ourName} vs ${baseName}: ${ratio.toFixed(2)}× (goal ≤ 1.5×) — ${ratio <= 1.5 ? "met" : "NOT met"}`,
  );
  ctx.writeResult("scoring", { reps, against, rows, ratio });
}
