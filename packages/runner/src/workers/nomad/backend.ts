import { setMaxListeners } from "node:events";
import { agentVersion, createDeadline } from "@flakegym/nomad-jobs";
import type { BackendCapabilities, WorkerBackend } from "../types.js";
import { type NomadBackendState, sweepOnce, wrapAbort } from "./backend-state.js";
import { NomadWorkerError } from "./errors.js";
import { resolvePolicyBaseUrl } from "./gateway.js";
import { workerDriver } from "./job-shape.js";
import { type NomadBackendDeps, NomadBackendOptions, type NomadBackendOptionsInput } from "./options.js";
import { ParentJobs } from "./parents.js";
import { http2Probe } from "./probe.js";
import { startAgent } from "./start-agent.js";
import { createStartQueue, startBoundMs } from "./start-queue.js";
import { NomadWorkerImpl } from "./worker.js";

export type { NomadWorker } from "./backend-state.js";
export {
  dispatchSnapshotDir,
  exitOf,
  snapshotDirOf,
  workerDriver,
  workerParentJob,
  workerSizing,
} from "./job-shape.js";

/**
 * Workers as Nomad allocations. One parameterized batch job per (run, task, worker spec); each
 * worker is one dispatch of it (docs/reference/nomad.md, "Job shape"). `start` dispatches, follows the
 * allocation until it runs, then probes the core's dynamic port until it answers; `stop` purges.
 * `exec` runs a command in a fresh allocation of the same image (a one-shot batch job) and
 * returns its exit code and logs. Every job this backend creates is purged on stop, on abort, on
 * failure and on `close()`; at the first start, jobs of this run id left by a crashed earlier
 * attempt and expired flakegym jobs are swept.
 */

export interface NomadBackend extends WorkerBackend {
  readonly kind: "nomad";
  /** Purges every job this backend still holds. Idempotent. */
  close(): Promise<void>;
  /** Jobs this backend has registered and not purged yet (for tests and shutdown reporting). */
  liveJobs(): string[];
}

/** The backend's options parsed, naming the first bad one. */
function parseOptions(input: NomadBackendOptionsInput): NomadBackendOptions {
  const parsed = NomadBackendOptions.safeParse(input);
  if (parsed.success) return parsed.data;
  const i = parsed.error.issues[0]!;
  throw new NomadWorkerError("E_NOMAD_CONFIG", `nomad backend option '${i.path.join(".")}': ${i.message}`);
}

/** A new backend's state (backend-state.ts): nothing registered, nothing swept. */
/** The backend's closing signal: every worker start listens on it while it runs (hundreds at once). */
function closingController(): AbortController {
  const c = new AbortController();
  setMaxListeners(0, c.signal);
  return c;
}

function newState(o: NomadBackendOptions, deps: NomadBackendDeps): NomadBackendState {
  return {
    o,
    client: deps.client,
    probe: deps.probe ?? http2Probe,
    now: deps.now ?? Date.now,
    progress: deps.onProgress,
    ns: o.namespace ? { namespace: o.namespace } : {},
    closing: closingController(),
    parents: new ParentJobs(
      deps.client,
      {
        namespace: o.namespace,
        cleanupTimeoutMs: o.cleanupTimeoutMs,
        registerTimeoutMs: Math.min(o.startTimeoutMs, 60_000),
      },
      deps.onProgress,
    ),
    starts: createStartQueue(o.maxConcurrentStarts, startBoundMs(o)),
    workers: new Set(),
    swept: new Map(),
  };
}

/** Starts a worker: the run's orphans swept first, then an agent dispatched or a command-only worker. */
async function start(
  st: NomadBackendState,
  spec: Parameters<WorkerBackend["start"]>[0],
  signal?: AbortSignal,
) {
  if (st.closing.signal.aborted) throw new NomadWorkerError("E_NOMAD_CLOSED", "the nomad backend is closed");
  const policyBaseUrl = spec.agent ? resolvePolicyBaseUrl(spec.gateway, st.o.gatewayAdvertise) : undefined;
  if (!spec.agent) workerDriver(st.o.driver, spec); // fail now, not at the first exec
  try {
    await sweepOnce(st, spec.runId, signal);
  } catch (err) {
    throw wrapAbort(err, signal, "sweeping orphaned flakegym jobs");
  }
  if (!spec.agent) {
    const w = new NomadWorkerImpl(st, spec);
    st.workers.add(w);
    return w;
  }
  // queued behind this runner's other starts; the start's own deadline begins once admitted
  using linked = createDeadline({ signals: [signal, st.closing.signal] });
  let admitted = false;
  try {
    return await st.starts.run(linked.signal, () => {
      admitted = true;
      return startAgent(st, spec, policyBaseUrl!, signal);
    });
  } catch (err) {
    if (admitted) throw err; // startAgent's own error, already named
    throw wrapAbort(err, signal, `waiting to start a Nomad worker for trajectory ${spec.trajectoryId}`);
  }
}

/** The backend as `flakegym doctor` and run.json describe it (Nomad's version and leader, bounded). */
async function describe(st: NomadBackendState): Promise<Record<string, string>> {
  const { o, client } = st;
  const out: Record<string, string> = {
    backend: "nomad",
    nomad_addr: client.config.address,
    driver: o.driver.driver,
    namespace: o.namespace ?? client.config.namespace ?? "default",
    gateway_advertise: o.gatewayAdvertise ?? "(not set)",
    cpu_limit: "CPU is shared by MHz reservation; per-worker CPU seconds are not enforced by Nomad",
  };
  try {
    const bound = { timeoutMs: 5_000, timeoutName: "the describe bound" };
    out.nomad_version = agentVersion((await client.agent.self(bound)).data) ?? "unknown";
    out.nomad_leader = (await client.status.leader(bound)).data || "(no leader)";
  } catch (err) {
    out.nomad_version = `unreachable: ${(err as Error).message}`;
  }
  return out;
}

/** Stops every worker and purges every job the backend holds. Idempotent. */
async function close(st: NomadBackendState): Promise<void> {
  if (!st.closing.signal.aborted)
    st.closing.abort(new NomadWorkerError("E_NOMAD_CLOSED", "the nomad backend is closing"));
  await Promise.allSettled([...st.workers].map((w) => w.stop()));
  await st.parents.purgeAll();
  await Promise.allSettled([...st.swept.values()]);
}

/**
 * The Nomad backend's capabilities: allocations on other machines, which bind no host files (the
 * scoring script installs the hidden tests), whose host may hold no snapshot work tree, and which
 * reach the gateway over the network. `hostForks` as named by the backend's name alone (raw_exec's
 * default); an instance says it exactly (nomadHostForks).
 */
export const NOMAD_CAPABILITIES: BackendCapabilities = {
  bindsHiddenReadOnly: false,
  hostHasSnapshotTree: false,
  needsRoutableGateway: true,
  runsHostImages: false,
  usesOneByteCore: false,
  hostForks: true,
};

/**
 * Whether a worker's dispatch names a fork made on the runner's host: only raw_exec without a
 * shared `snapshotDir` copies the trajectory's own fork (dispatchSnapshotDir); containers bring
 * their workspace in the image. Pure.
 */
export function nomadHostForks(o: Pick<NomadBackendOptions, "driver" | "snapshotDir">): boolean {
  return o.driver.driver === "raw_exec" && o.snapshotDir === undefined;
}

export function createNomadBackend(input: NomadBackendOptionsInput, deps: NomadBackendDeps): NomadBackend {
  const st = newState(parseOptions(input), deps);
  return {
    kind: "nomad",
    capabilities: { ...NOMAD_CAPABILITIES, hostForks: nomadHostForks(st.o) },
    start: (spec, signal) => start(st, spec, signal),
    describe: () => describe(st),
    close: () => close(st),
    liveJobs() {
      const ids = new Set(st.parents.ids());
      for (const w of st.workers) if (w.jobId) ids.add(w.jobId);
      return [...ids];
    },
  };
}
