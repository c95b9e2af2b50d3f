import { type ChildProcess, fork } from "node:child_process";
import { readdirSync } from "node:fs";
import { createServer } from "node:net";
import { networkInterfaces } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createDeadline } from "@flakegym/nomad-jobs";
import type { Launcher } from "./harness-priority.js";
import type { HoldStats } from "./hold.js";
import type { SimCoreOptions, SimStats } from "./sim-core.js";

/** The scale bench's other processes (the cluster, the model) and the runner's own gauges. */

const here = dirname(fileURLToPath(import.meta.url));

/** Node itself, no wrapper: a process at the runner's own priority. */
const asRunner: Launcher = { execPath: process.execPath, prefix: [] };

/**
 * Forks a bench child under tsx, started by `launcher` (e.g. `chrt --idle 0 node …`: the IPC
 * channel's fd and env pass through the wrapper's exec), and waits for its `{ ready }` (bounded).
 */
function forkReady<T>(
  file: string,
  argv: string[],
  what: string,
  launcher: Launcher,
): Promise<{ child: ChildProcess; ready: T }> {
  const child = fork(file, argv, {
    execPath: launcher.execPath,
    execArgv: [...launcher.prefix, "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not start within 60 s`)), 60_000);
    child.once("exit", (code) => reject(new Error(`${what} exited (${code}) before it was ready`)));
    child.on("message", (m: { ready?: T }) => {
      if (m.ready) {
        clearTimeout(timer);
        resolve({ child, ready: m.ready });
      }
    });
  });
}

/** Asks a child for one answer keyed `key` (bounded). */
export function ask<T>(child: ChildProcess, key: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no '${key}' answer within 20 s`)), 20_000);
    const on = (m: Record<string, unknown>) => {
      if (!(key in m)) return;
      clearTimeout(timer);
      child.off("message", on);
      resolve(m[key] as T);
    };
    child.on("message", on);
    child.send({ [key]: true });
  });
}

export interface ClusterStats {
  readonly sim: SimStats;
  readonly hold: HoldStats;
  /** The cluster process's own event-loop delay (the harness's pace: a late loop answers cores late). */
  readonly loopP99Ms: number;
  readonly loopMaxMs: number;
  readonly nomadRequests: number;
  readonly nomadByRoute: Record<string, number>;
  readonly cpuMs: number;
  readonly rssMb: number;
}

/** The cluster (the Nomad double and its simulated workers): harness, started by `launcher`. */
export const startCluster = (o: SimCoreOptions, launcher: Launcher) =>
  forkReady<{ nomadUrl: string }>(
    join(here, "cluster.ts"),
    [JSON.stringify(o)],
    "the cluster (Nomad double)",
    launcher,
  );

/** The OpenAI-compatible double with think time (the concurrency bench's slow upstream): harness. */
export const startUpstream = (thinkMs: number, intervalMs: number, launcher: Launcher) =>
  forkReady<{ baseUrl: string }>(
    join(here, "..", "concurrency", "slow-upstream.ts"),
    [String(thinkMs), String(intervalMs)],
    "the upstream model double",
    launcher,
  );

/**
 * An idle process measuring the machine's own scheduling delay (loop-probe.ts), at the runner's
 * priority: the floor any normal process's timers see on this machine meanwhile.
 */
export const startLoopProbe = () =>
  forkReady<object>(join(here, "loop-probe.ts"), [], "the loop probe", asRunner);

/** This machine's first non-loopback IPv4 address: where simulated allocations reach the gateway. */
export function routableAddress(): string {
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === "IPv4" && !a.internal) return a.address;
  throw new Error(
    "bench scale: this machine has no non-loopback IPv4 address; the Nomad backend refuses a loopback gateway advertise address",
  );
}

/** A port free on `host` right now (the gateway listens on it next). */
export function freePortOn(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, host, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Open file descriptors of this process. */
export function openFds(): number {
  return readdirSync("/proc/self/fd").length;
}

/**
 * Runs one point in a process of its own (point-child.ts), with this process's Node flags (tsx,
 * --cpu-prof when profiling) and --expose-gc (the point collects garbage before it measures its
 * base). Bounded by `timeoutMs`: a point that does not answer in time is killed and reported.
 */
export function runPointInChild<T>(options: object, timeoutMs: number): Promise<T> {
  const execArgv = [...new Set([...process.execArgv, "--expose-gc"])];
  const child = fork(join(here, "point-child.ts"), [JSON.stringify(options)], {
    execArgv,
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const deadline = createDeadline({
    timeout: { ms: timeoutMs, limit: "the scale bench's point timeout (--point-timeout-s)" },
  });
  return new Promise<T>((resolve, reject) => {
    const onTimeout = () => {
      child.kill("SIGKILL");
      reject(deadline.signal.reason);
    };
    deadline.signal.addEventListener("abort", onTimeout, { once: true });
    const settle = () => {
      deadline.signal.removeEventListener("abort", onTimeout);
      deadline.dispose();
    };
    child.on("message", (m: { result?: T; error?: string }) => {
      settle();
      if (m.result !== undefined) resolve(m.result);
      else reject(new Error(`bench scale: the point's process failed: ${m.error}`));
    });
    child.once("exit", (code, sig) => {
      settle();
      reject(new Error(`bench scale: the point's process exited (${code ?? sig}) without a result`));
    });
  });
}
