import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { mkdir, open } from "node:fs/promises";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { type ClineClient, createClineClient } from "./client.js";
import { buildCoreEnv } from "./env.js";
import { ClineVendorError, ErrorCode } from "./errors.js";
import { type MemoryMergeDecision, probeMemoryMerge } from "./memory-merge.js";
import type { OneByteDecision } from "./one-byte-core.js";
import { type ClinePackage, resolveClinePackage } from "./paths.js";
import { processRssBytes } from "./proc.js";

/** Path of the plain-JS supervisor (runnable with just `node`). */
export const SUPERVISOR_PATH = fileURLToPath(new URL("../supervisor/cline-supervisor.mjs", import.meta.url));

/** A command line the launcher is about to spawn; `wrap` may rewrite it (e.g. prefix `bwrap …`). */
export interface LaunchCommand {
  readonly command: string;
  readonly args: string[];
  readonly env: Record<string, string>;
}

/** Where the core's gRPC server listens. */
export type CoreListen = { readonly kind: "tcp" } | { readonly kind: "unix"; readonly path: string };

export interface LaunchOptions {
  /** The directory the agent works in (must exist). */
  readonly workspace: string;
  /** The core's config dir (`--config`): settings, secrets, task artifacts, core.log. Created if missing. */
  readonly configDir: string;
  /** HOME of the core and the agent's commands (Cline creates `$HOME/Cline/...`). Created if missing. */
  readonly home: string;
  /** Extra environment on top of the allow-list (credential-like names are refused). */
  readonly env?: Readonly<Record<string, string>>;
  /** Aborting it cancels the start, or stops a started core. */
  readonly signal?: AbortSignal;
  /** Bound on spawn → first successful gRPC call. Default 60 s. */
  readonly startTimeoutMs?: number;
  /** tcp (default): a free port on 127.0.0.1; unix: the core binds this socket path itself. */
  readonly listen?: CoreListen;
  /** Rewrites the supervisor command (sandboxing). Paths inside must match the outside ones. */
  readonly wrap?: (cmd: LaunchCommand) => LaunchCommand;
  /** SIGTERM → SIGKILL grace for stop(). Default 3 s. */
  readonly stopGraceMs?: number;
  /** Extra supervisor flags, e.g. `["--forward", "127.0.0.1:4000=unix:/run/gw.sock"]`. */
  readonly supervisorArgs?: readonly string[];
  /** The pinned package; default {@link resolveClinePackage}(). */
  readonly clinePackage?: ClinePackage;
  /**
   * Niceness (0–19) of the supervisor and everything under it (host, core, the agent's commands),
   * so the caller and its gateway go first on a busy machine. Default: the caller's own.
   */
  readonly nice?: number;
  /**
   * Same-page merging for the core (memory-merge.ts). Default: on where the kernel runs it, unless
   * FLAKEGYM_CORE_MEMORY_MERGE=0. `false` starts the core as before.
   */
  readonly memoryMerge?: boolean;
  /**
   * The core's bundle as a one-byte string (one-byte-core.ts: `probeOneByteCore`); when `on`, the
   * core runs `coreJs` from that directory (a sandbox must bind it). Default: the package's own bundle.
   */
  readonly oneByte?: OneByteDecision;
}

/** A running core (host + core under one supervisor, in one process group). */
export interface ClineCore {
  /** gRPC target: `127.0.0.1:<port>` or `unix:/path`. */
  readonly address: string;
  readonly configDir: string;
  readonly home: string;
  readonly workspace: string;
  /** pid of the spawned process (the supervisor, or the wrapper); it leads the process group. */
  readonly pid: number;
  /** pids as the supervisor sees them (inside a pid namespace they differ from the host's). */
  readonly childPids: { readonly supervisor: number; readonly host: number; readonly core: number };
  /** File both children's output is appended to (the core logs its environment there). */
  readonly logFile: string;
  readonly client: ClineClient;
  readonly timings: { readonly bootMs: number };
  /** Whether the core runs with same-page merging, or why not. */
  readonly memoryMerge: MemoryMergeDecision;
  /** Whether the core runs the one-byte bundle, or why not. */
  readonly oneByte: OneByteDecision;
  /**
   * Resident memory of the core and host processes (Linux; undefined when wrapped, since pids
   * inside a sandbox's pid namespace are not the host's).
   */
  memory(): Promise<{ coreRssBytes?: number; hostRssBytes?: number }>;
  /** Resolves when the supervisor has exited (for whatever reason). */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Flushes pending state (best effort), then SIGTERM → SIGKILL the process group. Idempotent. */
  stop(): Promise<void>;
}

interface SupervisorEvent {
  event: string;
  [key: string]: unknown;
}

function tailOf(file: string, bytes = 4000): string {
  try {
    const size = statSync(file).size;
    const buf = readFileSync(file);
    return buf.subarray(Math.max(0, size - bytes)).toString("utf8");
  } catch {
    return "(no core log)";
  }
}

function killGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig);
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

/**
 * Starts cline-host and cline-core under the supervisor and waits until the core answers a real
 * gRPC call (`StateService.getProcessInfo`). Throws E_CLINE_START (with the tail of core.log) when
 * it does not within `startTimeoutMs`, or when the processes die while starting.
 */
export async function launchClineCore(options: LaunchOptions): Promise<ClineCore> {
  const t0 = performance.now();
  const pkg = options.clinePackage ?? resolveClinePackage();
  const workspace = resolve(options.workspace);
  const configDir = resolve(options.configDir);
  const home = resolve(options.home);
  if (!existsSync(workspace) || !statSync(workspace).isDirectory())
    throw new ClineVendorError(ErrorCode.InvalidArgument, `workspace ${workspace} is not a directory`, {
      hint: "create the workspace before launching the core",
    });
  await Promise.all([mkdir(configDir, { recursive: true }), mkdir(home, { recursive: true })]);
  const logFile = join(configDir, "core.log");
  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  const listen = options.listen ?? { kind: "tcp" };
  const env = buildCoreEnv(process.env, home, options.env);
  const memoryMerge = probeMemoryMerge(options.memoryMerge);
  const oneByte: OneByteDecision = options.oneByte ?? { on: false, reason: "not asked for by the caller" };
  const args = [
    SUPERVISOR_PATH,
    "--host-bin",
    pkg.hostBinary,
    "--core-js",
    oneByte.on ? oneByte.coreJs : pkg.coreJs,
    "--node-path",
    `${pkg.nodeModules}:${pkg.fakeNodeModules}`,
    "--workspace",
    workspace,
    "--config",
    configDir,
    "--log",
    logFile,
    "--core-address",
    listen.kind === "unix" ? `unix:${resolve(listen.path)}` : "127.0.0.1:0",
    "--grace-ms",
    String(Math.max(0, (options.stopGraceMs ?? 3000) - 500)),
    "--node",
    process.execPath,
    "--watch-stdin",
    ...(options.nice !== undefined ? ["--nice", String(options.nice)] : []),
    ...(memoryMerge.on ? memoryMerge.prefix.flatMap((a) => ["--core-prefix", a]) : []),
    ...(options.supervisorArgs ?? []),
  ];
  const cmd = (options.wrap ?? ((c) => c))({ command: process.execPath, args, env });
  options.signal?.throwIfAborted();

  // Make sure the log exists so a failed start can always show its tail.
  await (await open(logFile, "a")).close();
  const child: ChildProcess = spawn(cmd.command, cmd.args, {
    env: cmd.env,
    detached: true,
    // stdin stays an open pipe: when this process dies, the supervisor reads EOF and stops.
    stdio: ["pipe", "pipe", "pipe"],
  });
  const pid = child.pid;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) => {
    child.once("exit", (code, signal) => res({ code, signal }));
  });
  let spawnError: Error | undefined;
  child.once("error", (err) => {
    spawnError = err;
  });
  let stderrTail = "";
  child.stderr?.on("data", (c: Buffer) => {
    stderrTail = (stderrTail + c.toString("utf8")).slice(-4000);
  });
  const events: SupervisorEvent[] = [];
  let onEvent: (() => void) | undefined;
  if (child.stdout) {
    createInterface({ input: child.stdout }).on("line", (line) => {
      try {
        events.push(JSON.parse(line) as SupervisorEvent);
        onEvent?.();
      } catch {
        // not an event line
      }
    });
  }
  // Do not keep the caller's event loop alive for the supervisor.
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  (child.stdout as unknown as { unref?: () => void } | null)?.unref?.();
  (child.stderr as unknown as { unref?: () => void } | null)?.unref?.();

  let client: ClineClient | undefined;
  let stopping: Promise<void> | undefined;
  let exitedNow = false;
  void exited.then(() => {
    exitedNow = true;
    onEvent?.();
  });
  const graceMs = options.stopGraceMs ?? 3000;

  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      options.signal?.removeEventListener("abort", onAbort);
      if (client && !exitedNow) {
        try {
          await client.state.flushPendingState({ deadlineMs: 2000 });
        } catch {
          // best effort: the core may be busy or gone
        }
      }
      client?.close();
      if (pid !== undefined && !exitedNow) {
        killGroup(pid, "SIGTERM");
        const timer = setTimeout(() => killGroup(pid, "SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
        // The supervisor killed its children; make sure nothing of the group is left either.
        killGroup(pid, "SIGKILL");
      }
      child.stdin?.destroy();
    })();
    return stopping;
  };
  const onAbort = () => void stop();

  const fail = async (message: string, cause?: unknown): Promise<never> => {
    await stop();
    const supervisorErr = stderrTail.trim() ? `\n--- supervisor stderr ---\n${stderrTail.trim()}` : "";
    throw new ClineVendorError(
      ErrorCode.StartFailed,
      `${message}\n--- tail of ${logFile} ---\n${tailOf(logFile).trim()}${supervisorErr}`,
      {
        hint: "see the core log above; check that the cline package is installed (`npx flakegym doctor`)",
        cause,
      },
    );
  };

  const deadline = Date.now() + startTimeoutMs;
  const waitFor = async (pred: () => boolean, untilMs: number): Promise<boolean> => {
    while (!pred()) {
      if (exitedNow || spawnError || options.signal?.aborted) return false;
      const left = untilMs - Date.now();
      if (left <= 0) return false;
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 1000));
        onEvent = () => {
          clearTimeout(t);
          r();
        };
      });
      onEvent = undefined;
    }
    return true;
  };
  if (options.signal) options.signal.addEventListener("abort", onAbort, { once: true });

  try {
    const started = () => events.find((e) => e.event === "started");
    if (!(await waitFor(() => started() !== undefined, deadline))) {
      if (options.signal?.aborted) {
        await stop();
        throw options.signal.reason;
      }
      return await fail(
        spawnError
          ? `could not spawn ${cmd.command}: ${spawnError.message}`
          : exitedNow
            ? "the supervisor exited before starting cline-host and cline-core"
            : `the supervisor did not start the core within ${startTimeoutMs} ms`,
        spawnError,
      );
    }
    const info = started()!;
    const address = String(info["coreAddress"]);
    // The core prints a line once its gRPC server is bound; wait for it (bounded), then confirm
    // with a real call. If the line never comes (log format changed), the gRPC poll still works.
    await waitFor(() => events.some((e) => e.event === "listening"), Math.min(deadline, Date.now() + 15_000));
    if (options.signal?.aborted) {
      await stop();
      throw options.signal.reason;
    }
    if (exitedNow) {
      const why = events.find((e) => e.event === "stopping");
      return await fail(
        `cline-host/cline-core exited while starting (${String(why?.["reason"] ?? "unknown")})`,
      );
    }
    client = createClineClient({ address, descriptorSet: pkg.descriptorSet });
    let lastErr: unknown;
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0)
        return await fail(`the core at ${address} did not answer within ${startTimeoutMs} ms`, lastErr);
      try {
        await client.state.getProcessInfo({
          deadlineMs: Math.min(left, 2000),
          waitForReady: true,
          ...(options.signal ? { signal: options.signal } : {}),
        });
        break;
      } catch (err) {
        if (options.signal?.aborted) {
          await stop();
          throw options.signal.reason;
        }
        if (exitedNow) return await fail("cline-host/cline-core exited while starting", err);
        lastErr = err;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    const bootMs = Math.round(performance.now() - t0);
    return {
      address,
      configDir,
      home,
      workspace,
      pid: pid!,
      childPids: {
        supervisor: Number(info["supervisorPid"]),
        host: Number(info["hostPid"]),
        core: Number(info["corePid"]),
      },
      logFile,
      client,
      timings: { bootMs },
      memoryMerge,
      oneByte,
      exited,
      async memory() {
        if (options.wrap) return {};
        const [core, host] = await Promise.all([
          processRssBytes(Number(info["corePid"])),
          processRssBytes(Number(info["hostPid"])),
        ]);
        return {
          ...(core !== undefined ? { coreRssBytes: core } : {}),
          ...(host !== undefined ? { hostRssBytes: host } : {}),
        };
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
