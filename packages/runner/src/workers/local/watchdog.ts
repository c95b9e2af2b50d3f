import { unboundedDiskOver } from "../bounded-dirs.js";
import { frozenExitOf, heartbeatLost } from "../frozen-verdict.js";
import { agentExitOf, cpuOverOf, diskCheckDue, memoryExitOf, pidsExitOf } from "./decisions.js";
import { freezeEvidenceOf } from "./freeze-evidence.js";
import { endWorker, type LocalWorkerState, limitsOf } from "./worker-state.js";

/**
 * The worker's end when its supervisor stopped beating (workers/frozen-verdict.ts): frozen from
 * outside (its bwrap stopped, or in a sandbox of two users a process of the supervisor's user), or
 * in a sandbox of one user its supervisor stopped (within the agent's reach). Without bubblewrap
 * everything shares the agent's reach and nothing is weighed.
 */
export function frozenExitNow(ws: LocalWorkerState) {
  const agent = ws.agent;
  if (!agent || ws.unsafe) return undefined;
  if (!heartbeatLost(agent.heartbeatAgeMs())) return undefined;
  return frozenExitOf(freezeEvidenceOf(agent));
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
