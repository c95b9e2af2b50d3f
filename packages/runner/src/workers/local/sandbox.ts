import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import type { ExecResult } from "../types.js";
import { apartPrefix, type BwrapSpec, buildBwrapArgs, droppingNetPrefix, mayRunApart } from "./bwrap-args.js";
import type { WorkerCgroup } from "./cgroup.js";
import { containerPrefix } from "./container-root.js";

/** Per-process rlimits applied with `prlimit` around bwrap (inherited by everything inside). */
export interface Rlimits {
  /** RLIMIT_CPU, seconds (per process). */
  readonly cpuSeconds?: number;
  /** RLIMIT_FSIZE, MiB: the largest file a process may write. */
  readonly fileSizeMb?: number;
  /** RLIMIT_NPROC: only used without cgroups (as root it counts every process of the uid). */
  readonly nproc?: number;
  /** RLIMIT_DATA, MiB: only used without cgroups (RLIMIT_AS would break V8's reservations). */
  readonly dataMb?: number;
}

/** How one command is wrapped: cgroup join → prlimit → bwrap (or no bwrap in unsafe mode). */
export interface SandboxShape {
  /** The bwrap spec; `undefined` runs without a sandbox (`--unsafe-no-sandbox`). */
  readonly bwrap: BwrapSpec | undefined;
  readonly cgroup?: WorkerCgroup;
  readonly rlimits: Rlimits;
  /** Path of the bwrap binary. */
  readonly bwrapPath?: string;
}

/** A command line ready for spawn: what `wrap` hooks receive and return. */
export interface CommandLine {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

const JOIN_SCRIPT = 'for f in $FLAKEGYM_CGROUP_PROCS; do echo $$ > "$f" || exit 125; done; exec "$@"';

function prlimitArgs(r: Rlimits): string[] {
  const a: string[] = [];
  if (r.cpuSeconds !== undefined) a.push(`--cpu=${r.cpuSeconds}`);
  if (r.fileSizeMb !== undefined) a.push(`--fsize=${r.fileSizeMb * 1024 * 1024}`);
  if (r.nproc !== undefined) a.push(`--nproc=${r.nproc}`);
  if (r.dataMb !== undefined) a.push(`--data=${r.dataMb * 1024 * 1024}`);
  return a.length ? ["prlimit", ...a, "--"] : [];
}

/**
 * Wraps `argv` (a program and its arguments, as seen inside the sandbox) into the full host command
 * line. Pure: the same shape always gives the same command line.
 */
export function wrapCommand(
  shape: SandboxShape,
  argv: readonly string[],
  hostEnv: Readonly<Record<string, string>> = {},
): CommandLine {
  const inner = shape.bwrap
    ? [
        ...(shape.bwrap.network === "dropping"
          ? droppingNetPrefix(shape.bwrap.droppingViaUserNamespace === true)
          : []),
        ...(shape.bwrap.container ? containerPrefix() : []),
        ...(shape.bwrap.apart && mayRunApart(shape.bwrap)
          ? apartPrefix(
              shape.bwrap.uid,
              shape.bwrap.gid,
              shape.bwrap.apart.runnerUid,
              shape.bwrap.apart.runnerGid,
            )
          : []),
        shape.bwrapPath ?? "bwrap",
        ...buildBwrapArgs(shape.bwrap),
        "--",
        ...argv,
      ]
    : ["env", "-i", ...Object.entries(hostEnv).map(([k, v]) => `${k}=${v}`), ...argv];
  const limited = [...prlimitArgs(shape.rlimits), ...inner];
  const procs = shape.cgroup?.procsFiles ?? [];
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin" };
  if (procs.length === 0) return { command: limited[0]!, args: limited.slice(1), env };
  env.FLAKEGYM_CGROUP_PROCS = procs.join(" ");
  return { command: "/bin/sh", args: ["-c", JOIN_SCRIPT, "flakegym-join", ...limited], env };
}

export interface RunOptions {
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  /** Cap on captured bytes per stream (default 4 MiB); the rest is dropped with a marker. */
  readonly maxOutputBytes?: number;
  /** Streams output lines as they arrive (progress). */
  readonly onOutput?: (chunk: string, stream: "stdout" | "stderr") => void;
  /** cwd on the host for unsafe (unsandboxed) runs. */
  readonly hostCwd?: string;
}

class Capture {
  private chunks: Buffer[] = [];
  private size = 0;
  private dropped = 0;
  constructor(private readonly max: number) {}
  push(b: Buffer) {
    if (this.size >= this.max) {
      this.dropped += b.length;
      return;
    }
    const room = this.max - this.size;
    const take = b.length > room ? b.subarray(0, room) : b;
    this.chunks.push(take);
    this.size += take.length;
    this.dropped += b.length - take.length;
  }
  text(): string {
    const s = Buffer.concat(this.chunks).toString("utf8");
    return this.dropped ? `${s}\n[flakegym: ${this.dropped} more bytes dropped]` : s;
  }
}

/**
 * Kills a spawned wrapper's whole process group. Inside bwrap that is enough: bwrap's init runs
 * with --die-with-parent, and when a pid namespace's init dies the kernel kills every process in
 * it (even ones that called setsid). The worker's cgroup is swept only when the worker stops,
 * since an exec shares it with the agent.
 */
function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    // gone
  }
}

/**
 * Runs `argv` in the sandbox to completion (or until the timeout / abort), capturing output.
 * The result has the same shape whether the command succeeded, failed or timed out.
 */
export async function runSandboxed(
  shape: SandboxShape,
  argv: readonly string[],
  opts: RunOptions,
  hostEnv: Readonly<Record<string, string>> = {},
): Promise<ExecResult> {
  const line = wrapCommand(shape, argv, hostEnv);
  const started = performance.now();
  const out = new Capture(opts.maxOutputBytes ?? 4 * 1024 * 1024);
  const err = new Capture(opts.maxOutputBytes ?? 4 * 1024 * 1024);
  const child = spawn(line.command, [...line.args], {
    env: line.env,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    ...(shape.bwrap ? {} : { cwd: opts.hostCwd }),
  });
  let timedOut = false;
  let aborted = false;
  const onStdout = (b: Buffer) => {
    out.push(b);
    opts.onOutput?.(b.toString("utf8"), "stdout");
  };
  const onStderr = (b: Buffer) => {
    err.push(b);
    opts.onOutput?.(b.toString("utf8"), "stderr");
  };
  child.stdout.on("data", onStdout);
  child.stderr.on("data", onStderr);
  let stoppedAtDeadline = false;
  const timer = setTimeout(() => {
    timedOut = true;
    // the sandbox process (bwrap, outside the sandbox's pid namespace) stopped: frozen from outside
    stoppedAtDeadline = shape.bwrap !== undefined && child.pid !== undefined && processStopped(child.pid);
    killGroup(child.pid);
  }, opts.timeoutMs);
  const onAbort = () => {
    aborted = true;
    killGroup(child.pid);
  };
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  if (opts.signal?.aborted) onAbort();
  try {
    let signalled = false;
    const exitCode = await new Promise<number>((resolve) => {
      child.on("error", (e) => {
        err.push(Buffer.from(`flakegym: cannot start ${line.command}: ${e.message}\n`));
        resolve(127);
      });
      child.on("close", (code, sig) => {
        signalled = code === null && sig !== null;
        resolve(code ?? (sig ? 128 + signalNumber(sig) : 1));
      });
      // A descendant that outlives the command (possible only without bwrap) may hold the pipes
      // open: do not wait for it longer than a moment.
      child.on("exit", (code, sig) => {
        setTimeout(() => {
          child.stdout.destroy();
          child.stderr.destroy();
          resolve(code ?? (sig ? 128 + signalNumber(sig) : 1));
        }, 500).unref();
      });
    });
    return {
      exitCode: aborted && exitCode === 0 ? 130 : exitCode,
      stdout: out.text(),
      stderr: err.text(),
      timedOut,
      durationMs: Math.round(performance.now() - started),
      // bwrap itself died of a signal nobody here sent: killed from outside the sandbox
      ...(shape.bwrap && signalled && !timedOut && !aborted ? { sandboxKilled: true } : {}),
      ...(stoppedAtDeadline ? { sandboxStopped: true } : {}),
    };
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener("abort", onAbort);
  }
}

/** Whether a /proc/<pid>/stat line says the process is stopped (`T`) or traced-stopped (`t`). Pure. */
export function isStoppedStat(stat: string): boolean {
  // the state is the first field after the command name's closing parenthesis (a name may hold one)
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  return state === "T" || state === "t";
}

/** Whether process `pid` (a host pid) is stopped now; false when it is gone or unreadable. */
export function processStopped(pid: number): boolean {
  try {
    return isStoppedStat(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

function signalNumber(sig: NodeJS.Signals): number {
  const table: Partial<Record<NodeJS.Signals, number>> = {
    SIGKILL: 9,
    SIGTERM: 15,
    SIGINT: 2,
    SIGXCPU: 24,
    SIGXFSZ: 25,
    SIGSEGV: 11,
    SIGABRT: 6,
  };
  return table[sig] ?? 1;
}
