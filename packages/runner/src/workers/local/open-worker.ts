import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { FlakegymError } from "../../errors.js";
import { writeOwnerRecord } from "../../gc/owner.js";
import { type BoundedDirs, fsEnforcesQuota, makeBoundedDirs, removeWorkerDir } from "../bounded-dirs.js";
import { collectHostArtifacts } from "../host-artifacts.js";
import type { ResetReport } from "../pool/reuse.js";
import { workspaceRelative } from "../read-only-files.js";
import type { Worker, WorkerExit, WorkerSpec } from "../types.js";
import { collectCoreGarbage, corePidAmong } from "./core-collect.js";
import {
  aliasBindsOf,
  bootLimitsOf,
  policyBaseUrlOf,
  readOnlyBindsOf,
  sandboxNetworkOf,
  workerBindsOf,
  workerIdOf,
} from "./decisions.js";
import { cpuSecondsOf, execInWorker } from "./exec.js";
import { adoptFork, makeSlot, releaseSlot, type Slot } from "./pool-slot.js";
import { recordPristine, stateDirsOf } from "./pristine.js";
import { resetWorker } from "./reset-worker.js";
import { bwrapMissingError, findBwrap, type PreparedShape, prepareShape } from "./shape.js";
import { userNetnsWorks } from "./user-netns.js";
import { startWatchdog, watchAgent } from "./watchdog.js";
import {
  armWallClock,
  endedError,
  endWorker,
  type LocalBackendState,
  type LocalWorkerParts,
  type LocalWorkerState,
} from "./worker-state.js";

/** A started sandbox (and core) waiting for its trajectory: `assign` starts its limits and returns the worker. */
export interface OpenWorker {
  readonly id: string;
  readonly exited: Promise<WorkerExit>;
  assign(spec: WorkerSpec): Promise<Worker>;
  /** Pooled agent workers: back to their first-ready state after a trajectory (reset-worker.ts). */
  reset(): Promise<ResetReport>;
  stop(): Promise<void>;
}

/** The worker's own dirs: its state dir (owned, for `flakegym gc`), a pooled worker's slot, the bounded state. */
async function makeWorkerDirs(
  bs: LocalBackendState,
  workerDir: string,
  pooled: boolean,
): Promise<{ slot: Slot | undefined; dirs: BoundedDirs }> {
  await mkdir(workerDir, { recursive: true });
  await writeOwnerRecord(workerDir, "worker");
  const slot = pooled
    ? await makeSlot(workerDir).catch(async (err) => {
        await removeWorkerDir(workerDir, undefined);
        throw err;
      })
    : undefined;
  const dirs = await makeBoundedDirs(workerDir, bs.options.stateSizeMb ?? 512).catch(async (err) => {
    await releaseSlot(slot, workerDir);
    throw err;
  });
  return { slot, dirs };
}

/** The worker's sandbox shape (and cgroup); on failure everything made so far goes. */
async function prepareWorkerShape(
  bs: LocalBackendState,
  c: { id: string; spec: WorkerSpec; workerDir: string; slot: Slot | undefined; dirs: BoundedDirs },
): Promise<PreparedShape> {
  const { spec, slot, dirs } = c;
  const isRoot = process.geteuid?.() === 0;
  const net = sandboxNetworkOf(spec, isRoot, !spec.agent && !isRoot && (await userNetnsWorks()));
  return prepareShape({
    id: c.id,
    profile: spec.profile,
    workspace: slot?.workspace ?? spec.workspace,
    ...(spec.depsDir ? { deps: slot?.deps ?? spec.depsDir } : {}),
    stateDir: join(dirs.root, "sandbox"),
    limits: bootLimitsOf(spec.limits, slot !== undefined),
    ...net,
    binds: workerBindsOf(spec, dirs),
    workspaceBinds: [
      ...readOnlyBindsOf(spec, workspaceRelative),
      ...aliasBindsOf(spec, slot?.workspace ?? spec.workspace, workspaceRelative),
    ],
    ...(spec.env ? { env: spec.env } : {}),
    persistentHome: true,
    ...(dirs.bounded ? { tmpDir: dirs.tmp } : {}),
    ...(bs.options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
    ...(spec.systemRoot ? { systemRoot: spec.systemRoot } : {}),
    ...(spec.systemRoot && spec.workspaceAlias ? { cwd: spec.workspaceAlias } : {}),
  }).catch(async (err) => {
    await releaseSlot(slot, c.workerDir, dirs);
    throw err;
  });
}

/** A worker's state before anything runs in it: no exit, no trajectory, limits of its spec. */
function newWorkerState(parts: LocalWorkerParts): LocalWorkerState {
  let resolveExit!: (e: WorkerExit) => void;
  const exited = new Promise<WorkerExit>((r) => {
    resolveExit = r;
  });
  return {
    ...parts,
    unsafe: parts.prepared.shape.bwrap === undefined,
    life: new AbortController(),
    exited,
    resolveExit,
    exit: undefined,
    stopping: undefined,
    agent: undefined,
    wallClock: undefined,
    watchdog: undefined,
    active: undefined,
    assigned: false,
    startedAt: Date.now(),
    cpuBaseUsec: 0,
    pidsRejectedBase: 0,
    quotaByFs: false,
    lastDiskCheck: 0,
    checking: false,
    pristine: undefined,
  };
}

/** Starts the Cline core in the sandbox (agent workers); a failed start ends the worker. */
async function launchAgent(
  bs: LocalBackendState,
  ws: LocalWorkerState,
  signal: AbortSignal | undefined,
): Promise<void> {
  const { spec, slot, dirs } = ws;
  try {
    ws.agent = await bs.agentLauncher.launch({
      spec: slot ? { ...spec, workspace: slot.workspace } : spec,
      prepared: ws.prepared,
      configDir: dirs.config,
      socketDir: dirs.sock,
      policyBaseUrl: policyBaseUrlOf(spec),
      ...(signal ? { signal } : {}),
    });
    watchAgent(ws);
    if (ws.agent.users === "one" && !ws.unsafe) noteOneUser(bs);
  } catch (err) {
    await endWorker(ws, { reason: "crashed", detail: (err as Error).message });
    throw err;
  }
}

let oneUserNoted = false;
/** Says once per process that the agent's commands run as the core's user (who could reach it decides). */
function noteOneUser(bs: LocalBackendState): void {
  if (oneUserNoted) return;
  oneUserNoted = true;
  bs.options.onNote?.(
    "the agent's commands run as the same user as the Cline core (the runner is not root, or FLAKEGYM_AGENT_USERS=one): they can signal, stop or kill it, so a core that dies or stops answering after they ran ends the trajectory as the policy's (agent_error, scored), not as infra_error; run as root for two users (docs/reference/sandbox.md)",
  );
}

/** Makes the worker's dirs, sandbox shape and (agents) its core; limits count from `assign`. */
export async function openWorker(
  bs: LocalBackendState,
  spec: WorkerSpec,
  signal: AbortSignal | undefined,
  pooled: boolean,
): Promise<OpenWorker> {
  signal?.throwIfAborted();
  if (!findBwrap() && !bs.options.unsafeNoSandbox) throw bwrapMissingError();
  const id = workerIdOf(spec, pooled, randomBytes(3).toString("hex"));
  const workerDir = join(bs.root, id);
  const { slot, dirs } = await makeWorkerDirs(bs, workerDir, pooled);
  const prepared = await prepareWorkerShape(bs, { id, spec, workerDir, slot, dirs });
  const ws = newWorkerState({ id, spec, workerDir, slot, dirs, prepared });
  armWallClock(ws);
  startWatchdog(ws, bs.options.watchdogIntervalMs ?? 1000);
  if (spec.agent) await launchAgent(bs, ws, signal);
  if (spec.agent && pooled) await keepPristine(ws, bs);
  return {
    id,
    exited: ws.exited,
    assign: (s) => assignWorker(ws, s),
    reset: () => resetWorker(ws),
    stop: () => endWorker(ws, { reason: "stopped" }),
  };
}

/** Records what a reset restores; a worker whose record fails is never reset (retired after one trajectory). */
async function keepPristine(ws: LocalWorkerState, bs: LocalBackendState): Promise<void> {
  try {
    const missed = await collectAtReady(ws);
    if (missed)
      bs.options.onNote?.(`worker ${ws.id}: its core did not collect its garbage when ready: ${missed}`);
    ws.pristine = await recordPristine(ws);
  } catch (err) {
    bs.options.onNote?.(
      `worker ${ws.id} cannot be reset (its first-ready state was not recorded): ${(err as Error).message}`,
    );
  }
}

/**
 * An idle-ready core gives back its boot's garbage and free pages (core-collect.ts; with the mapped
 * core, V8's low-memory collection and malloc_trim) before it waits in the pool, and before its
 * first-ready memory is read. Why it did not, else undefined; the marker stays in the log.
 */
async function collectAtReady(ws: LocalWorkerState): Promise<string | undefined> {
  const pid = await corePidAmong(await ws.prepared.cgroup.pids());
  if (pid === undefined) return "the core's process was not found in the worker's cgroup";
  const r = await collectCoreGarbage(pid, join(stateDirsOf(ws).config, "core.log"));
  return r.done ? undefined : r.why;
}

/** Gives the worker its trajectory (once): a pooled worker mounts the fork; the trajectory's limits count from here. */
async function assignWorker(ws: LocalWorkerState, s: WorkerSpec): Promise<Worker> {
  if (ws.exit) throw endedError(ws, ws.exit);
  if (ws.assigned) throw new FlakegymError("E_POOL_ADOPT", `worker ${ws.id} already served a trajectory`);
  ws.assigned = true;
  if (ws.slot) {
    try {
      await adoptFork(ws.slot, s);
    } catch (err) {
      await endWorker(ws, { reason: "crashed", detail: (err as Error).message });
      throw err;
    }
    ws.cpuBaseUsec = (await ws.prepared.cgroup.usage())?.cpuUsec ?? 0;
    ws.pidsRejectedBase = (await ws.prepared.cgroup.events().catch(() => undefined))?.pidsRejected ?? 0;
  }
  ws.quotaByFs = s.limits.diskMb !== undefined && (await fsEnforcesQuota(s.workspace, s.limits.diskMb));
  const ended = ws.exit as WorkerExit | undefined;
  if (ended) throw endedError(ws, ended);
  // the trajectory's limits count from here (a cold worker: from its start, boot included)
  ws.active = { ...s };
  if (ws.slot) {
    ws.startedAt = Date.now();
    armWallClock(ws);
  }
  return workerOf(ws, s);
}

/** The worker a trajectory `s` is handed. */
function workerOf(ws: LocalWorkerState, s: WorkerSpec): Worker {
  const { id, agent, dirs } = ws;
  return {
    id,
    backend: "local",
    ...(agent ? { agentAddress: agent.address } : {}),
    ...(agent?.users ? { agentUsers: agent.users } : {}),
    ...(agent ? { policyBaseUrl: ws.unsafe ? agent.policyBaseUrl : policyBaseUrlOf(s) } : {}),
    configDir: dirs.config,
    pooled: ws.slot !== undefined,
    exited: ws.exited,
    ...(agent
      ? {
          collectArtifacts: (c) =>
            collectHostArtifacts({ id, configDir: dirs.config, workspace: s.workspace }, c),
        }
      : {}),
    exec: (command, o) => execInWorker(ws, s, command, o),
    cpuSeconds: () => cpuSecondsOf(ws),
    stop: () => endWorker(ws, { reason: "stopped" }),
  };
}
