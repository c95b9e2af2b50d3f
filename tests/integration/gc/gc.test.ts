import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { SweepReport } from "@flakegym/runner";
import { findProcesses, makeTempDir, runCli, waitFor } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

// `flakegym gc` after a kill -9 of a runner: a real overlay fork with a tmpfs quota, a real local
// worker (cgroups, bounded state tmpfs, dirs) with a command running, and a live owner beside it.
const FIXTURE = join(import.meta.dirname, "fixtures", "runner-like.ts");
const root = process.getuid?.() === 0;
const hasBwrap = existsSync("/usr/bin/bwrap");
const skip = !root ? "not root (overlay and tmpfs mounts need root)" : !hasBwrap ? "bubblewrap missing" : "";
if (skip) console.warn(`gc suite skipped: ${skip}`);

interface Made {
  readonly tag: string;
  readonly fork: string;
  readonly workerDir: string;
}

/**
 * The temp dir of this suite's owners and of its `flakegym gc` (their TMPDIR): every rollout sweeps
 * `<tmpdir>/flakegym-*` when it starts, and a rollout of another suite running at the same time
 * would otherwise sweep this dead owner before the gc under test sees it.
 */
let privateTmp = "";

async function startOwner(dir: string): Promise<{ child: ChildProcess; made: Made }> {
  const child = spawn(process.execPath, ["--import", "tsx", FIXTURE, dir], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, TMPDIR: privateTmp },
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once("line", resolve);
    child.once("exit", (code) => reject(new Error(`fixture exited early with ${code}`)));
  });
  return { child, made: JSON.parse(line) as Made };
}

async function mountsUnder(path: string): Promise<string[]> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  return info
    .split("\n")
    .map((l) => l.split(" ")[4] ?? "")
    .filter((m) => m === path || m.startsWith(`${path}/`));
}

async function cgroupsOf(tag: string): Promise<string[]> {
  const r = await execa("find", ["/sys/fs/cgroup", "-maxdepth", "6", "-type", "d", "-name", `${tag}-*`], {
    reject: false,
  });
  return r.stdout.split("\n").filter(Boolean);
}

async function leftovers(m: Made) {
  return {
    mounts: [...(await mountsUnder(m.fork)), ...(await mountsUnder(m.workerDir))],
    cgroups: await cgroupsOf(m.tag),
    dirs: [m.fork, m.workerDir].filter((d) => existsSync(d)),
  };
}

async function gc(args: string[]): Promise<SweepReport> {
  const r = await runCli(["gc", "--json", ...args], {
    timeoutMs: 120_000,
    env: { ...process.env, TMPDIR: privateTmp },
  });
  expect(r.exitCode, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as SweepReport;
}

/** A `flakegym-gctest-*` dir inside `parent` (so the gc under test, with TMPDIR=parent, scans it). */
async function makeTempIn(parent: string) {
  const path = await mkdtemp(join(parent, "flakegym-gctest-"));
  const cleanup = () => rm(path, { recursive: true, force: true, maxRetries: 3 });
  return { path, [Symbol.asyncDispose]: cleanup };
}

describe.skipIf(skip !== "")("flakegym gc", () => {
  it("after kill -9 of a runner removes its processes, mounts, cgroups and dirs; a live owner's stay", async () => {
    await using base = await makeTempDir("gc-isolated-");
    privateTmp = base.path;
    await using deadDir = await makeTempIn(base.path);
    await using liveDir = await makeTempIn(base.path);
    const dead = await startOwner(deadDir.path);
    const live = await startOwner(liveDir.path);
    try {
      const before = await leftovers(dead.made);
      // what a runner makes: overlay + tmpfs quota of the fork, the worker's state tmpfs
      expect(before.mounts.length).toBe(3);
      expect(before.cgroups.length).toBeGreaterThan(0);
      expect(before.dirs.length).toBe(2);
      const marker = `gc-marker-${dead.child.pid}`;
      expect((await findProcesses(marker)).length).toBeGreaterThan(0);

      dead.child.kill("SIGKILL");
      await new Promise((r) => dead.child.once("exit", r));
      // nothing cleaned up by itself
      expect((await leftovers(dead.made)).dirs.length).toBe(2);
      expect((await leftovers(dead.made)).mounts.length).toBe(3);

      const dry = await gc(["--dry-run"]);
      expect(dry.dryRun).toBe(true);
      const planned = JSON.stringify(dry.plan.actions);
      expect(planned).toContain(dead.made.fork);
      expect(planned).toContain(dead.made.workerDir);
      expect(planned).not.toContain(live.made.fork);
      expect(planned).not.toContain(live.made.tag);
      expect((await leftovers(dead.made)).mounts.length).toBe(3); // dry: nothing removed

      const report = await gc([]);
      console.log(
        `gc removed: ${report.results.map((x) => `${x.action.kind}${x.ok ? "" : " FAILED"}`).join(", ")}`,
      );
      expect(report.results.filter((x) => !x.ok)).toEqual([]);
      expect(await leftovers(dead.made)).toEqual({ mounts: [], cgroups: [], dirs: [] });
      expect(await waitFor(async () => (await findProcesses(marker)).length === 0, 5000)).toBe(true);
      // the live owner's resources are untouched and its worker still runs its command
      const l = await leftovers(live.made);
      expect(l.mounts.length).toBe(3);
      expect(l.cgroups.length).toBeGreaterThan(0);
      expect(l.dirs.length).toBe(2);
      expect((await findProcesses(`gc-marker-${live.child.pid}`)).length).toBeGreaterThan(0);

      // and once that owner dies too, the next sweep takes its resources
      live.child.kill("SIGKILL");
      await new Promise((r) => live.child.once("exit", r));
      await gc([]);
      expect(await leftovers(live.made)).toEqual({ mounts: [], cgroups: [], dirs: [] });
    } finally {
      dead.child.kill("SIGKILL");
      live.child.kill("SIGKILL");
    }
  });
});
