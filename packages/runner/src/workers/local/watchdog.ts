import { unboundedDiskOver } from "../bounded-dirs.js";
import { frozenExitOf, heartbeatLost } from "../frozen-verdict.js";
import { SCORER_HOST_UID } from "./bwrap-args.js";
import { agentExitOf, cpuOverOf, diskCheckDue, memoryExitOf, pidsExitOf } from "./decisions.js";
import { readProcRows, stoppedOwnedBy } from "./out-of-reach-stop.js";
import { processStopped } from "./sandbox.js";
import { endWorker, type LocalWorkerState, limitsOf } from "./worker-state.js";

/**
 * The worker's end when it is frozen from outside (workers/frozen-verdict.ts): no heartbeat from
 * its supervisor and its bwrap — the host-side process, outside the sandbox's pid namespace, which
 * nothing inside can signal — stopped, or in a sandbox of two users a process of the supervisor's
 * user stopped. Without bubblewrap everything shares the agent's reach.
 */
export function frozenExitNow(ws: LocalWorkerState) {
  const agent = ws.agent;
  if (!agent || ws.unsafe) return undefined;
  const heartbeatAgeMs = agent.heartbeatAgeMs();
  if (!heartbeatLost(heartbeatAgeMs)) return undefined;
  return frozenExitOf({ heartbeatAgeMs, outsideFreeze: outsideFreezeOf(agent) });
}

/**
 * What is stopped out of the agent's reach: the sandbox's bwrap (outside its pid namespace), or, in
 * a sandbox of two users, a process of the supervisor's user (the agent's commands run as another).
 */
function outsideFreezeOf(agent: { readonly pid: number; readonly users?: string }): string | undefined {
  if (processStopped(agent.pid)) {
    return `its bwrap (pid ${agent.pid}, outside the sandbox's pid namespace) is stopped (state T)`;
  }
  if (agent.users !== "apart") return undefined;
  const held = stoppedOwnedBy(readProcRows(), agent.pid, SCORER_HOST_UID);
  return held
    ? `its process ${held.pid}, of the supervisor's user (the agent's commands run as another and cannot signal it), is stopped (state T)`
    : undefined;
}

/** One check of liveness, CPU time, memory and (now and then) disk use against the limits in force. */
async function tick(ws: LocalWorkerState, intervalMs: number): Promise<void> {
  const frozen = ws.active ? frozenExitNow(ws) : undefined;
  if (frozen) {
    await endWorker(ws, frozen);
    return;
  }
  const usage = await ws.prepared.cgroup.usage();
  const limits = limitsOf(ws);
  const assigned = ws.active !== undefined;
  const cpu = cpuOverOf({ assigned, usage, cpuBaseUsec: ws.cpuBaseUsec, limits });
  if (cpu) {
    await endWorker(ws, cpu);
    return;
  }
  if (await ws.prepared.cgroup.memoryLimitHit()) {
    const shmem = await ws.prepared.cgroup.shmemBytes().catch(() => undefined);
    await endWorker(ws, memoryExitOf(limits, false, shmem));
    return;
  }
  const pids = await pidsExitNow(ws);
  if (pids) {
    await endWorker(ws, pids);
    return;
  }
  if (ws.active && diskCheckDue(assigned, Date.now(), ws.lastDiskCheck, intervalMs)) {
    ws.lastDiskCheck = Date.now();
    const over = await unboundedDiskOver(ws.active, ws.quotaByFs, ws.dirs);
    if (over) await endWorker(ws, { reason: "disk", detail: over });
  }
}

/** The pids limit's end now, from the cgroup's counter against the one at assignment. */
async function pidsExitNow(ws: LocalWorkerState) {
  const events = await ws.prepared.cgroup.events().catch(() => undefined);
  return pidsExitOf({
    assigned: ws.active !== undefined,
    pidsRejected: events?.pidsRejected,
    pidsRejectedBase: ws.pidsRejectedBase,
    limits: limitsOf(ws),
  });
}

/** Checks the worker every `intervalMs` until it ends (one tick at a time). */
export function startWatchdog(ws: LocalWorkerState, intervalMs: number): void {
  ws.watchdog = setInterval(async () => {
    if (ws.checking || ws.exit) return;
    ws.checking = true;
    try {
      await tick(ws, intervalMs);
    } finally {
      ws.checking = false;
    }
  }, intervalMs);
}

/** Ends the worker when its agent exits by itself (the OOM killer's pick is the memory limit, not a crash). */
export function watchAgent(ws: LocalWorkerState): void {
  void ws.agent?.exited.then(async (r) => {
    if (ws.exit) return;
    const oom = await ws.prepared.cgroup.memoryLimitHit().catch(() => false);
    const pids = await pidsExitNow(ws);
    const shmem = oom ? await ws.prepared.cgroup.shmemBytes().catch(() => undefined) : undefined;
    if (ws.exit) return;
    void endWorker(ws, agentExitOf(r, oom, limitsOf(ws), pids, shmem));
  });
}
