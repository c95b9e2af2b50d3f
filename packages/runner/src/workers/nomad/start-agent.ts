import { randomBytes, randomUUID } from "node:crypto";
import {
  type Allocation,
  createDeadline,
  GRPC_PORT_LABEL,
  idPart,
  type Job,
  META,
  NomadError,
} from "@flakegym/nomad-jobs";
import type { WorkerSpec } from "../types.js";
import { allocationError, followAllocation, isTerminal, watchAllocation } from "./allocation.js";
import { cleanupOpts, type NomadBackendState, purge, sleep, stderrTail, wrapAbort } from "./backend-state.js";
import { NomadWorkerError } from "./errors.js";
import { addressOf, dispatchSnapshotDir, workerParentJob } from "./job-shape.js";
import { NomadWorkerImpl } from "./worker.js";

/** The dispatch of one agent worker from its parent job (pure but for the random idempotency token). */
export function dispatchRequestOf(
  st: Pick<NomadBackendState, "o" | "now">,
  spec: WorkerSpec,
  policyBaseUrl: string,
  coreToken: string,
) {
  const expires = st.now() + spec.limits.wallClockMs + st.o.startTimeoutMs + st.o.graceMs;
  const snapshotDir = dispatchSnapshotDir(st.o, spec);
  return {
    meta: {
      [META.trajectory]: spec.trajectoryId,
      [META.expires]: String(expires),
      // per trajectory: carried by the dispatch, so the parent is one per (image, profile, resources)
      [META.policyUrl]: policyBaseUrl,
      // per worker: the supervisor's gate admits only calls carrying it (docs/reference/nomad.md, Isolation)
      [META.coreToken]: coreToken,
      ...(snapshotDir ? { [META.snapshotDir]: snapshotDir } : {}),
    },
    idempotencyToken: `${idPart(spec.trajectoryId, 60)}:${randomUUID()}`,
    idPrefixTemplate: idPart(spec.trajectoryId, 40),
  };
}

type DispatchRequest = ReturnType<typeof dispatchRequestOf>;

/** Dispatches a child of `parent`, registering the parent again when Nomad lost it. */
async function dispatch(
  st: NomadBackendState,
  parent: Job,
  request: DispatchRequest,
  signal: AbortSignal,
): Promise<string> {
  try {
    return (await st.client.jobs.dispatch(parent.ID, request, { signal, ...st.ns })).data.DispatchedJobID;
  } catch (err) {
    if (!(err instanceof NomadError && /parameterized job not found/.test(err.body))) throw err;
    await st.parents.reRegister(parent);
    return (await st.client.jobs.dispatch(parent.ID, request, { signal, ...st.ns })).data.DispatchedJobID;
  }
}

/**
 * Starts an agent worker: its parent job registered (shared), one dispatch followed until its
 * allocation runs and its core answers gRPC. On any failure the child (even one whose dispatch
 * answer was lost) is purged and the parent released.
 */
export async function startAgent(
  st: NomadBackendState,
  spec: WorkerSpec,
  policyBaseUrl: string,
  signal: AbortSignal | undefined,
): Promise<NomadWorkerImpl> {
  const t0 = performance.now();
  const deadline = Date.now() + st.o.startTimeoutMs;
  const parent = workerParentJob(st.o, spec, policyBaseUrl, st.now());
  const coreToken = randomBytes(32).toString("base64url");
  using linked = createDeadline({ signals: [signal, st.closing.signal] });
  await st.parents.acquire(parent, linked.signal);
  const request = dispatchRequestOf(st, spec, policyBaseUrl, coreToken);
  let childId: string | undefined;
  try {
    childId = await dispatch(st, parent, request, linked.signal);
    st.progress?.({ kind: "dispatched", jobId: childId, trajectoryId: spec.trajectoryId });
    const alloc = await followAllocation(
      {
        client: st.client,
        jobId: childId,
        signal: linked.signal,
        deadline,
        pollMs: st.o.pollMs,
        onProgress: st.progress,
        purpose: "start",
        namespace: st.o.namespace,
        stderrTail: (allocId) => stderrTail(st, allocId),
      },
      "running",
    );
    const address = addressOf(alloc, childId);
    await waitUntilAnswering(st, childId, alloc, address, deadline, linked.signal);
    st.progress?.({ kind: "ready", jobId: childId, address, ms: Math.round(performance.now() - t0) });
    const place = { parentId: parent.ID, jobId: childId, alloc, agentAddress: address, policyBaseUrl };
    const w = new NomadWorkerImpl(st, spec, { ...place, agentToken: coreToken });
    st.workers.add(w);
    return w;
  } catch (err) {
    if (childId === undefined) {
      // The dispatch may have reached Nomad with its answer lost: the same token returns the
      // child it created (or creates one), which we then purge.
      try {
        childId = (await st.client.jobs.dispatch(parent.ID, request, cleanupOpts(st))).data.DispatchedJobID;
      } catch {
        // nothing was created, or Nomad is unreachable: the sweep will find it by expiry
      }
    }
    if (childId !== undefined) await purge(st, childId);
    await st.parents.release(parent.ID).catch(() => {});
    throw wrapAbort(err, signal, `starting a Nomad worker for trajectory ${spec.trajectoryId}`);
  }
}

/** Probes the core's address until it answers, the allocation ends, or the start deadline passes. */
async function waitUntilAnswering(
  st: NomadBackendState,
  jobId: string,
  alloc: Allocation,
  address: string,
  deadline: number,
  signal: AbortSignal,
): Promise<void> {
  const watcher = watchAllocation(st.client, alloc, st.o.pollMs, st.o.namespace);
  try {
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const cur = watcher.latest();
      if (isTerminal(cur))
        throw allocationError(cur, jobId, "before its core answered", await stderrTail(st, cur.ID));
      if (Date.now() > deadline) {
        throw new NomadWorkerError(
          "E_NOMAD_NOT_READY",
          `job ${jobId}: allocation ${alloc.ID} runs, but nothing answered gRPC at ${address} within ${st.o.startTimeoutMs} ms`,
          {
            jobId,
            allocId: alloc.ID,
            hint: `the worker must start the Cline core listening on 0.0.0.0:$NOMAD_PORT_${GRPC_PORT_LABEL} (PROTOBUS_ADDRESS); read 'nomad alloc logs -stderr ${alloc.ID}'. If it listens, check that this machine can reach ${address} (firewall between runner and client)`,
          },
        );
      }
      if (await st.probe(address, { signal, timeoutMs: 2_000 })) return;
      await sleep(st.o.probeIntervalMs, signal);
    }
  } finally {
    await watcher.stop();
  }
}
