/**
 * `npm run bench -- snapshot-image [--task stats-empty-mean] [--reps 3] [--image <ref>]`
 *
 * The first trajectory's ready workspace on podman with `--images nix`: the task's snapshot taken
 * from its snapshot image (`snapshotFromImage`: `/workspace` copied out of the image, the image's
 * build outputs committed as the base, nothing installed or built host-side) + the fork, vs the
 * baseline, the host build (`buildSnapshot`: source, install commands such as
 * `cargo build --tests`, smoke commands) + the fork. Each rep uses an empty snapshot cache, so
 * both are a first trajectory's cost. Prints wall ms and CPU s (this process and its reaped
 * children: bubblewrap, cargo, podman) side by side with the ratios, and the load.
 *
 * `--image` names a loaded snapshot image of the task (`flakegym images load --task <id>`);
 * without it the bench makes one from its own first host build (`podman import` of that
 * workspace with the snapshot labels), said in the output: the copy-out path measured is the same.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { buildSnapshot, forkSnapshot } from "../packages/runner/src/snapshots/build.js";
import { podmanImageTreeReader, snapshotFromImage } from "../packages/runner/src/snapshots/from-image.js";
import type { Snapshot } from "../packages/runner/src/snapshots/manifest.js";
import { snapshotSpecOfTask } from "../packages/runner/src/snapshots/spec.js";
import { BUILTIN_CATALOG_DIR, loadTask } from "../packages/runner/src/tasks/catalog.js";
import { type BenchContext, benchFlags, loadStr, median, printTable, procCpuSeconds } from "./lib.js";
import { openRunCgroup } from "./run-cgroup.js";

interface Sample {
  ms: number;
  cpuS: number;
}

/** Why this machine cannot run the bench, or "". */
function whyNot(): string {
  if (!existsSync("/usr/bin/podman")) return "podman is not installed (apt-get install podman runc)";
  try {
    execFileSync("cargo", ["--version"], { stdio: "ignore", timeout: 30_000 });
  } catch {
    return "cargo is not on PATH (the rust catalog tasks build with it; scripts/ensure-system-deps)";
  }
  return "";
}

/** Wall ms and CPU s (`cpuNow`) of `f`. */
async function measure(cpuNow: () => Promise<number>, f: () => Promise<void>): Promise<Sample> {
  const cpu0 = await cpuNow();
  const t0 = performance.now();
  await f();
  return { ms: performance.now() - t0, cpuS: (await cpuNow()) - cpu0 };
}

/** The first trajectory's fork of `snapshot`, released at once. */
async function forkOnce(snapshot: Snapshot, dir: string): Promise<void> {
  const fork = await forkSnapshot(snapshot, { dest: join(dir, "fork"), quotaMb: 2048 });
  await fork.release();
}

/** A snapshot image of the task made from a host build's workspace, with nix/snapshot-image.nix's labels. */
async function imageFromHostBuild(s: Snapshot, ref: string): Promise<void> {
  const labels = {
    "org.flakegym.task": s.manifest.taskId,
    "org.flakegym.snapshot.commit": s.manifest.commit,
    "org.flakegym.snapshot.profile": s.manifest.profile,
  };
  const changes = Object.entries(labels).flatMap(([k, v]) => ["--change", `LABEL ${k}=${v}`]);
  const tar = spawn("tar", ["--numeric-owner", "-C", s.tree, "-c", "workspace"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const imported = execa("podman", ["import", ...changes, "-", ref], { timeout: 600_000, stdin: "pipe" });
  tar.stdout.pipe(imported.stdin!);
  await imported;
}

export async function main(ctx: BenchContext, args: string[]): Promise<void> {
  const why = whyNot();
  if (why) {
    console.log(`snapshot-image: skipped: ${why}`);
    return;
  }
  const { flag, num } = benchFlags("snapshot-image", args);
  const taskId = flag("task", "stats-empty-mean");
  const reps = Math.max(1, num("reps", 3));
  const spec = snapshotSpecOfTask(await loadTask(taskId, BUILTIN_CATALOG_DIR));
  const scratch = await mkdtemp(join(tmpdir(), "flakegym-bench-snapimg-"));
  // the host build's commands run in sandboxes with cgroups of their own: only a cgroup of this
  // run's own sees their CPU (bench/run-cgroup.ts)
  const cg = await openRunCgroup(`flakegym-bench-snapimg-${process.pid}`);
  const counted =
    "reason" in cg
      ? `CPU: this process and its reaped children only; sandboxed build steps NOT counted (${cg.reason})`
      : "CPU: this process and everything it started (its own cpuacct cgroup: sandboxed build steps, podman)";
  const cpuNow = async () => ("reason" in cg ? procCpuSeconds(["self"]) : await cg.cpuSeconds());
  const made = `localhost/flakegym-bench/snapshot-${taskId}:bench`;
  let ref = flag("image", "");
  try {
    const host = async (i: string) => {
      const dir = join(scratch, `host-${i}`);
      let s: Snapshot | undefined;
      const m = await measure(cpuNow, async () => {
        s = await buildSnapshot(spec, { cacheDir: join(dir, "cache") });
        await forkOnce(s, dir);
      });
      return { m, s: s! };
    };
    const first = await host("0");
    if (!ref) {
      await imageFromHostBuild(first.s, made);
      ref = made;
      console.log(`image: ${made}, made from the host build's workspace (no --image given)`);
    } else console.log(`image: ${ref}`);
    const digest = (
      await execa("podman", ["image", "inspect", "--format", "{{.Id}}", ref], { timeout: 60_000 })
    ).stdout.trim();
    const reader = podmanImageTreeReader();
    const fromImage = async (i: string) => {
      const dir = join(scratch, `img-${i}`);
      return await measure(cpuNow, async () => {
        const s = await snapshotFromImage(spec, { ref, digest }, reader, { cacheDir: join(dir, "cache") });
        await forkOnce(s, dir);
      });
    };
    const ours: Sample[] = [];
    const base: Sample[] = [first.m];
    // alternating which goes first; the host build's first sample is the one above
    for (let i = 0; i < reps; i++) {
      if (i % 2 === 0) {
        ours.push(await fromImage(String(i)));
        if (i > 0) base.push((await host(String(i))).m);
      } else {
        base.push((await host(String(i))).m);
        ours.push(await fromImage(String(i)));
      }
    }
    const row = (name: string, xs: Sample[]) => ({
      "first workspace ready": name,
      "wall ms (median)": Math.round(median(xs.map((x) => x.ms))),
      "CPU s (median)": median(xs.map((x) => x.cpuS)).toFixed(2),
      n: xs.length,
    });
    console.log(counted);
    console.log(
      `task ${taskId} (${spec.profile}), install: ${JSON.stringify(spec.install)}; load ${loadStr()}`,
    );
    printTable([row("from the snapshot image (ours)", ours), row("host build (baseline)", base)]);
    const ratio = (f: (x: Sample) => number) => median(ours.map(f)) / median(base.map(f));
    const result = {
      taskId,
      image: ref,
      digest,
      load: loadStr(),
      ours,
      base,
      wallRatio: ratio((x) => x.ms),
      cpuRatio: ratio((x) => x.cpuS),
    };
    console.log(
      `ratio ours/baseline: wall ${result.wallRatio.toFixed(3)}×, CPU ${result.cpuRatio.toFixed(3)}×`,
    );
    ctx.writeResult("snapshot-image", result);
  } finally {
    if (ref === made) await execa("podman", ["image", "rm", "-f", made], { reject: false, timeout: 60_000 });
    if (!("reason" in cg)) {
      const left = await cg.close();
      if (left) console.log(`cgroup: ${left}`);
    }
    await rm(scratch, { recursive: true, force: true });
  }
}
