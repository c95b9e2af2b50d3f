import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { execa } from "execa";
import { FlakegymError } from "../../errors.js";
import { writeOwnerRecord } from "../../gc/owner.js";
import { currentMountPoints, unmountRetry } from "../../gc/unmount.js";
import {
  type BoundedDirs,
  filesystemFull,
  fsEnforcesQuota,
  makeBoundedDirs,
  removeWorkerDir,
  unboundedDiskOver,
} from "../bounded-dirs.js";
import { execTimeoutMs, stoppedExecResult } from "../exec-budget.js";
import { collectHostArtifacts } from "../host-artifacts.js";
import { execLimitOf } from "../limit-verdict.js";
import type { PoolableBackend } from "../pool/types.js";
import { workspaceRelative } from "../read-only-files.js";
import type {
  CollectArtifactsInput,
  ExecOptions,
  ExecResult,
  Worker,
  WorkerExit,
  WorkerSpec,
} from "../types.js";
import type { AgentLauncher, RunningAgent } from "./agent.js";
import type { Bind } from "./bwrap-args.js";
import { probeCgroups } from "./cgroup.js";
import { clineAgentLauncher } from "./cline-agent.js";
import { runSandboxed, type SandboxShape } from "./sandbox.js";
import {
  findBwrap,
  prepareShape,
  SANDBOX_GATEWAY_PORT,
  SANDBOX_GATEWAY_SOCKET,
  SANDBOX_PATHS,
} from "./shape.js";

export interface LocalBackendOptions {
  /** Parent of per-worker state dirs (home, config, sockets). Default `<tmpdir>/flakegym-workers`. */
  readonly stateDir?: string;
  /** Run without bubblewrap when it is missing (explicit user choice: no isolation at all). */
  readonly unsafeNoSandbox?: boolean;
  /** Starts Cline inside the sandbox for `agent: true` workers. Default: {@link clineAgentLauncher}. */
  readonly agent?: AgentLauncher;
  /** How often CPU time, memory and disk use are checked, ms (default 1000). */
  readonly watchdogIntervalMs?: number;
  /** Size of the worker's own state (HOME, /tmp, Cline config, sockets: one tmpfs), MiB. Default 512. */
  readonly stateSizeMb?: number;
}

function sanitize(s: string): string {
  return s.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 40);
}

/**
 * Host dirs of a pooled worker that its sandbox binds at /workspace and /deps: each a shared mount
 * point, so a fork bound onto it from outside at assignment propagates into the running sandbox
 * (bwrap's mounts are slaves of the host's).
 */
interface Slot {
  readonly workspace: string;
  readonly deps: string;
}

/** A started sandbox (and core) waiting for its trajectory: `assign` starts its limits and returns the worker. */
interface OpenWorker {
  readonly id: string;
  readonly exited: Promise<WorkerExit>;
  assign(spec: WorkerSpec): Promise<Worker>;
  stop(): Promise<void>;
}

/** CPU seconds a pooled worker may spend booting and idling on top of the trajectory's budget (per-process backstop only). */
const POOL_BOOT_CPU_SECONDS = 120;

/** The embedded default backend: one bubblewrap sandbox per worker on this machine. */
export function createLocalBackend(options: LocalBackendOptions = {}): PoolableBackend {
  const root = options.stateDir ?? join(tmpdir(), "flakegym-workers");
  const agentLauncher = options.agent ?? clineAgentLauncher();
  let poolProbe: Promise<string | undefined> | undefined;

  /** Makes the worker's dirs, sandbox shape and (agents) its core; limits count from `assign`. */
  async function open(
    spec: WorkerSpec,
    signal: AbortSignal | undefined,
    pooled: boolean,
  ): Promise<OpenWorker> {
    signal?.throwIfAborted();
    if (!findBwrap() && !options.unsafeNoSandbox) {
      const { bwrapMissingError } = await import("./shape.js");
      throw bwrapMissingError();
    }
    const id = `${sanitize(pooled ? `pool-${spec.runId}-${spec.profile}` : `${spec.runId}-${spec.trajectoryId}`)}-${randomBytes(3).toString("hex")}`;
    const workerDir = join(root, id);
    await mkdir(workerDir, { recursive: true });
    await writeOwnerRecord(workerDir, "worker");
    const slot = pooled
      ? await makeSlot(workerDir).catch(async (err) => {
          await removeWorkerDir(workerDir, undefined);
          throw err;
        })
      : undefined;
    const dirs = await makeBoundedDirs(workerDir, options.stateSizeMb ?? 512).catch(async (err) => {
      await releaseSlot(slot, workerDir);
      throw err;
    });
    const configDir = dirs.config;
    const socketDir = dirs.sock;
    const binds: Bind[] = [];
    if (spec.agent) {
      binds.push(
        { src: configDir, dest: configDir, rw: true },
        { src: socketDir, dest: socketDir, rw: true },
      );
    }
    // agents reach the policy through it; exec-only workers given one too (contract stage scripts)
    if (spec.gateway.socketPath) binds.push({ src: spec.gateway.socketPath, dest: SANDBOX_GATEWAY_SOCKET });
    const boot = spec.limits;
    const prepared = await prepareShape({
      id,
      profile: spec.profile,
      workspace: slot?.workspace ?? spec.workspace,
      ...(spec.depsDir ? { deps: slot?.deps ?? spec.depsDir } : {}),
      stateDir: join(dirs.root, "sandbox"),
      limits:
        slot && boot.cpuSeconds !== undefined
          ? { ...boot, cpuSeconds: boot.cpuSeconds + POOL_BOOT_CPU_SECONDS }
          : boot,
      network: "none",
      binds,
      workspaceBinds: (spec.readOnlyFiles ?? []).map((f) => ({
        src: f.hostPath,
        dest: `${SANDBOX_PATHS.workspace}/${workspaceRelative(f.path)}`,
      })),
      ...(spec.env ? { env: spec.env } : {}),
      persistentHome: true,
      ...(dirs.bounded ? { tmpDir: dirs.tmp } : {}),
      ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
    }).catch(async (err) => {
      await releaseSlot(slot, workerDir, dirs);
      throw err;
    });
    const unsafe = prepared.shape.bwrap === undefined;
    const life = new AbortController();
    let exit: WorkerExit | undefined;
    let resolveExit!: (e: WorkerExit) => void;
    const exited = new Promise<WorkerExit>((r) => {
      resolveExit = r;
    });
    let agent: RunningAgent | undefined;
    let stopping: Promise<void> | undefined;
    const timers: NodeJS.Timeout[] = [];
    // what the limits are measured against: the spec being served, from its assignment on
    let active = spec;
    let startedAt = Date.now();
    let cpuBaseUsec = 0;
    let quotaByFs = false;

    const end = (e: WorkerExit): Promise<void> => {
      if (stopping) return stopping;
      exit = e;
      stopping = (async () => {
        for (const t of timers) clearTimeout(t);
        life.abort(new FlakegymError("E_WORKER_STOPPED", `worker ${id} stopped: ${e.reason}`));
        await agent?.stop().catch(() => {});
        await prepared.cgroup.killAll(5000);
        await prepared.dispose();
        // everything the worker made goes: config (gateway token), sockets, HOME, /tmp
        await releaseSlot(slot, workerDir, dirs).catch(() => {});
        resolveExit(e);
      })();
      return stopping;
    };

    // an idle pooled worker is bounded by its template's wall clock (the pool's idle limit)
    const armWallClock = () =>
      timers.push(
        setTimeout(
          () =>
            void end({ reason: "wall_clock", detail: `wall clock limit ${active.limits.wallClockMs} ms` }),
          active.limits.wallClockMs,
        ),
      );
    armWallClock();
    const interval = options.watchdogIntervalMs ?? 1000;
    let lastDiskCheck = 0;
    let checking = false;
    const watchdog = setInterval(async () => {
      if (checking || exit) return;
      checking = true;
      try {
        const usage = await prepared.cgroup.usage();
        const budget = active.limits.cpuSeconds;
        if (usage && budget !== undefined && active !== spec && usage.cpuUsec - cpuBaseUsec >= budget * 1e6) {
          await end({
            reason: "cpu_time",
            detail: `used ${((usage.cpuUsec - cpuBaseUsec) / 1e6).toFixed(1)} s of CPU (limit ${budget} s)`,
          });
          return;
        }
        if (await prepared.cgroup.memoryLimitHit()) {
          await end({ reason: "memory", detail: `memory limit ${active.limits.memoryMb} MiB reached` });
          return;
        }
        if (active !== spec && Date.now() - lastDiskCheck > 5 * interval) {
          lastDiskCheck = Date.now();
          const over = await unboundedDiskOver(active, quotaByFs, dirs);
          if (over) await end({ reason: "disk", detail: over });
        }
      } finally {
        checking = false;
      }
    }, interval);
    timers.push(watchdog);

    try {
      if (spec.agent) {
        agent = await agentLauncher.launch({
          spec: slot ? { ...spec, workspace: slot.workspace } : spec,
          prepared,
          configDir,
          socketDir,
          policyBaseUrl: policyBaseUrlOf(spec),
          ...(signal ? { signal } : {}),
        });
        void agent.exited.then(async (r) => {
          if (exit) return;
          // the OOM killer may have picked the core itself: that is the memory limit, not a crash
          const oom = await prepared.cgroup.memoryLimitHit().catch(() => false);
          if (exit) return;
          void end(
            oom
              ? {
                  reason: "memory",
                  detail: `memory limit ${active.limits.memoryMb} MiB reached (the agent was killed)`,
                }
              : {
                  reason: "crashed",
                  detail: `agent exited (code ${r.code})${r.detail ? `: ${r.detail}` : ""}`,
                },
          );
        });
      }
    } catch (err) {
      await end({ reason: "crashed", detail: (err as Error).message });
      throw err;
    }

    let assigned = false;
    const assign = async (s: WorkerSpec): Promise<Worker> => {
      if (exit) throw new FlakegymError("E_WORKER_STOPPED", `worker ${id} has ended (${exit.reason})`);
      if (assigned) throw new FlakegymError("E_POOL_ADOPT", `worker ${id} already served a trajectory`);
      assigned = true;
      if (slot) {
        try {
          await adoptFork(slot, s);
        } catch (err) {
          await end({ reason: "crashed", detail: (err as Error).message });
          throw err;
        }
        cpuBaseUsec = (await prepared.cgroup.usage())?.cpuUsec ?? 0;
      }
      quotaByFs = s.limits.diskMb !== undefined && (await fsEnforcesQuota(s.workspace, s.limits.diskMb));
      const ended = exit as WorkerExit | undefined;
      if (ended) throw new FlakegymError("E_WORKER_STOPPED", `worker ${id} has ended (${ended.reason})`);
      // the trajectory's limits count from here (a cold worker: from its start, boot included)
      active = { ...s };
      if (slot) {
        clearTimeout(timers.shift());
        startedAt = Date.now();
        armWallClock();
      }
      const worker: Worker = {
        id,
        backend: "local",
        ...(agent ? { agentAddress: agent.address } : {}),
        ...(agent ? { policyBaseUrl: unsafe ? agent.policyBaseUrl : policyBaseUrlOf(s) } : {}),
        configDir,
        pooled: slot !== undefined,
        exited,
        ...(agent
          ? {
              async collectArtifacts(c: CollectArtifactsInput): Promise<void> {
                await collectHostArtifacts({ id, configDir, workspace: s.workspace }, c);
              },
            }
          : {}),
        async exec(command: string, o: ExecOptions = {}): Promise<ExecResult> {
          if (exit) return stoppedExecResult(id, exit.reason);
          const before = await prepared.cgroup.events();
          const timeoutMs = execTimeoutMs(s, startedAt, o.timeoutMs);
          const cwd = o.cwd ?? (unsafe ? s.workspace : SANDBOX_PATHS.workspace);
          const envArgs = Object.entries(o.env ?? {}).map(([k, v]) => `${k}=${v}`);
          const argv = ["/usr/bin/env", ...envArgs, "/bin/sh", "-c", `cd "$0" && ${command}`, cwd];
          using linked = createDeadline({ signals: [life.signal, o.signal] });
          // each exec gets a fresh private /tmp, inside the worker's bounded state
          const execTmp = await freshExecTmp(dirs, prepared.shape);
          const full = async () =>
            (quotaByFs && (await filesystemFull(s.workspace))) ||
            (dirs.bounded && (await filesystemFull(dirs.root)));
          let r: ExecResult;
          let diskFull: boolean;
          try {
            r = await runSandboxed(
              execTmp?.shape ?? prepared.shape,
              argv,
              { timeoutMs, signal: linked.signal, hostCwd: s.workspace },
              prepared.env,
            );
            diskFull = r.exitCode !== 0 && (await full()); // before the exec's /tmp goes
          } finally {
            await execTmp?.remove();
          }
          // Ended by the worker's wall clock (its timer and this exec's race): that is a timeout.
          const ended = (exit as WorkerExit | undefined)?.reason;
          const timedOut = r.timedOut || ended === "wall_clock";
          const after = await prepared.cgroup.events();
          const limit = execLimitOf({
            exitCode: r.exitCode,
            timedOut,
            ...(ended ? { workerExit: ended } : {}),
            oomKills: after.oomKills - before.oomKills,
            pidsRejected: after.pidsRejected - before.pidsRejected,
            diskFull,
          });
          return { ...r, timedOut, ...(limit ? { limit } : {}) };
        },
        async cpuSeconds(): Promise<number | undefined> {
          const usage = await prepared.cgroup.usage();
          return usage === undefined ? undefined : usage.cpuUsec / 1e6;
        },
        stop: () => end({ reason: "stopped" }),
      };
      return worker;
    };
    return { id, exited, assign, stop: () => end({ reason: "stopped" }) };
  }

  return {
    kind: "local",
    async describe() {
      const bwrap = findBwrap();
      const version = bwrap
        ? (await execa(bwrap, ["--version"], { reject: false, timeout: 5000 })).stdout.trim()
        : "missing";
      return {
        sandbox: bwrap
          ? `bubblewrap (${version})`
          : options.unsafeNoSandbox
            ? "NONE (--unsafe-no-sandbox)"
            : "missing",
        cgroups: await probeCgroups(),
        stateDir: root,
      };
    },
    async start(spec, signal) {
      const w = await open(spec, signal, false);
      return await w.assign(spec);
    },
    poolUnavailable,
    async boot(template, signal) {
      const reason = await poolUnavailable();
      if (reason) throw new FlakegymError("E_POOL_UNAVAILABLE", `cannot pre-boot a worker: ${reason}`);
      const w = await open(template, signal, true);
      return { id: w.id, exited: w.exited, adopt: (spec) => w.assign(spec), stop: w.stop };
    },
  };
  function poolUnavailable(): Promise<string | undefined> {
    poolProbe ??= (async () => {
      if (options.unsafeNoSandbox || !findBwrap())
        return "no bubblewrap sandbox (a pooled worker adopts its workspace through the sandbox's mounts)";
      await mkdir(root, { recursive: true });
      return await probeMountPropagation(root);
    })();
    return poolProbe;
  }
}

async function mountCmd(args: string[]): Promise<void> {
  const r = await execa("mount", args, { reject: false, timeout: 30_000, stdin: "ignore" });
  if (r.exitCode !== 0)
    throw new FlakegymError(
      "E_POOL_MOUNT",
      `mount ${args.join(" ")}: ${r.stderr.trim() || `exit ${r.exitCode}`}`,
    );
}

/** Makes `dir` a shared mount point (a bind onto itself), so mounts on it reach sandboxes binding it. */
async function makeShared(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  await mountCmd(["--bind", dir, dir]);
  await mountCmd(["--make-shared", dir]);
}

async function makeSlot(workerDir: string): Promise<Slot> {
  const slot = { workspace: join(workerDir, "slot", "workspace"), deps: join(workerDir, "slot", "deps") };
  await makeShared(slot.workspace);
  await makeShared(slot.deps);
  return slot;
}

/** Binds the trajectory's fork (workspace, deps) onto the slot, from outside the running sandbox. */
async function adoptFork(slot: Slot, spec: WorkerSpec): Promise<void> {
  await mountCmd(["--bind", spec.workspace, slot.workspace]);
  if (spec.depsDir) await mountCmd(["--bind", spec.depsDir, slot.deps]);
}

/**
 * Unmounts everything on the slot (the adopted fork, then the slot's own bind) before the worker
 * dir is removed: removing it with a fork still bound there would delete the agent's workspace. A
 * slot that stays mounted leaves the dir to `flakegym gc`.
 */
async function releaseSlot(slot: Slot | undefined, workerDir: string, dirs?: BoundedDirs): Promise<void> {
  let clean = true;
  for (const p of slot ? [slot.deps, slot.workspace] : []) {
    for (let i = 0; i < 4; i++) {
      const r = await unmountRetry(p, { attempts: 2, delayMs: 100 });
      if (r.result === "not-mounted") break;
      if (r.result === "failed") {
        clean = false;
        break;
      }
    }
  }
  if (slot && (await currentMountPoints()).some((m) => m.startsWith(`${workerDir}/slot/`))) clean = false;
  if (clean) await removeWorkerDir(workerDir, dirs);
  else await dirs?.release();
}

/**
 * Whether a mount made on a shared host dir after a sandbox started reaches into it (root, mount
 * rights): undefined when it does, else why not (printed; workers then start cold).
 */
async function probeMountPropagation(root: string): Promise<string | undefined> {
  if (process.getuid?.() !== 0) {
    return `pooled workers adopt a trajectory's workspace by mounting it into the running sandbox, which needs root (running as uid ${process.getuid?.()})`;
  }
  const dir = await mkdtemp(join(root, "pool-probe-"));
  const slot = join(dir, "slot");
  try {
    await makeShared(slot);
    await mountCmd(["-t", "tmpfs", "-o", "size=1m", "tmpfs", slot]);
    return undefined;
  } catch (err) {
    return `cannot make a shared mount point here: ${(err as Error).message}`;
  } finally {
    for (let i = 0; i < 3; i++) if ((await unmountRetry(slot, { attempts: 1 })).result !== "unmounted") break;
    if (!(await currentMountPoints()).some((m) => m.startsWith(dir)))
      await rm(dir, { recursive: true, force: true });
  }
}

/**
 * A new dir in the worker's state tmpfs bound at /tmp for one exec (bwrap's own /tmp tmpfs is used
 * when the state is not a tmpfs), so nothing one exec leaves in /tmp is seen by the next.
 */
async function freshExecTmp(
  dirs: BoundedDirs,
  shape: SandboxShape,
): Promise<{ shape: SandboxShape; remove(): Promise<void> } | undefined> {
  if (!dirs.bounded || !shape.bwrap) return undefined;
  const tmp = await mkdtemp(join(dirs.root, "exec-tmp-"));
  return {
    shape: { ...shape, bwrap: { ...shape.bwrap, tmp } },
    remove: () => rm(tmp, { recursive: true, force: true }),
  };
}

/** The policy's base URL inside the sandbox: the supervisor's forwarder plus the trajectory's gateway route. */
function policyBaseUrlOf(spec: WorkerSpec): string {
  return `http://127.0.0.1:${SANDBOX_GATEWAY_PORT}${gatewayPath(spec)}`;
}

function gatewayPath(spec: WorkerSpec): string {
  if (!spec.gateway.url) return "/v1";
  try {
    const p = new URL(spec.gateway.url).pathname.replace(/\/$/, "");
    return p || "";
  } catch {
    return "/v1";
  }
}
