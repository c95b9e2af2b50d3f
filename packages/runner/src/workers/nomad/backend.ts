import { createHash, randomBytes, randomUUID } from "node:crypto";
import {
  type Allocation,
  agentVersion,
  buildExecJob,
  buildWorkerJob,
  createDeadline,
  EXEC_TASK,
  GRPC_PORT_LABEL,
  idPart,
  JOB_ID_PREFIX,
  type Job,
  META,
  type NomadClient,
  NomadError,
  sizeWorkerMemory,
  WORKER_TASK,
  type WorkerDriverInput,
} from "@flakegym/nomad-jobs";
import { match } from "ts-pattern";
import { FlakegymError } from "../../errors.js";
import type {
  CollectArtifactsInput,
  ExecOptions,
  ExecResult,
  Worker,
  WorkerBackend,
  WorkerExit,
  WorkerSpec,
} from "../types.js";
import {
  allocationError,
  describeTaskEvents,
  exitCodeOf,
  followAllocation,
  isTerminal,
  watchAllocation,
} from "./allocation.js";
import { collectFromAllocation } from "./artifacts.js";
import { NomadWorkerError } from "./errors.js";
import { resolvePolicyBaseUrl } from "./gateway.js";
import {
  type BackendDriver,
  type NomadBackendDeps,
  NomadBackendOptions,
  type NomadBackendOptionsInput,
} from "./options.js";
import { abortable, ParentJobs } from "./parents.js";
import { http2Probe } from "./probe.js";
import { sweepOrphans } from "./sweep.js";

/**
 * Workers as Nomad allocations. One parameterized batch job per (run, task, worker spec); each
 * worker is one dispatch of it (docs/nomad.md, "Job shape"). `start` dispatches, follows the
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

export interface NomadWorker extends Worker {
  readonly backend: "nomad";
  /** The dispatched job (agent workers) or undefined (command-only workers). */
  readonly jobId: string | undefined;
  readonly allocId: string | undefined;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });

function hash8(value: unknown): string {
  return createHash("sha256").update(JSON.stringify(value)).digest("hex").slice(0, 8);
}

/** The driver block of a job for this spec: the backend's driver with the spec's image. */
export function workerDriver(
  d: BackendDriver,
  spec: Pick<WorkerSpec, "image" | "profile">,
): WorkerDriverInput {
  const needImage = () => {
    if (!spec.image) {
      throw new NomadWorkerError(
        "E_NOMAD_CONFIG",
        `the ${d.driver} driver needs an image, and the worker spec has none`,
        {
          hint: "build the profile's or snapshot's image with the flake, push it, and pass it by digest (docs/nomad.md, Image publishing)",
        },
      );
    }
    return spec.image;
  };
  return match(d)
    .with({ driver: "docker" }, (c) => ({
      driver: "docker" as const,
      image: needImage(),
      allowMutableTag: c.allowMutableTag,
      args: c.args,
      ...(c.command ? { command: c.command } : {}),
      ...(c.networkMode ? { networkMode: c.networkMode } : {}),
      ...(c.containerPort ? { containerPort: c.containerPort } : {}),
      ...(c.runtime ? { runtime: c.runtime } : {}),
    }))
    .with({ driver: "podman" }, (c) => ({
      driver: "podman" as const,
      image: needImage(),
      allowMutableTag: c.allowMutableTag,
      args: c.args,
      ...(c.command ? { command: c.command } : {}),
      ...(c.networkMode ? { networkMode: c.networkMode } : {}),
      ...(c.containerPort ? { containerPort: c.containerPort } : {}),
    }))
    .with({ driver: "nix" }, (c) => {
      const flake = spec.image?.includes("#") ? spec.image : c.flake?.replaceAll("{profile}", spec.profile);
      if (!flake) {
        throw new NomadWorkerError("E_NOMAD_CONFIG", "the nix driver needs a flake output for the worker", {
          hint: "pass the worker spec's image as <flake-ref>#<output>, or set the backend's nix.flake template",
        });
      }
      return { driver: "nix" as const, flake, command: c.command, args: c.args };
    })
    .with({ driver: "raw_exec" }, (c) => ({
      driver: "raw_exec" as const,
      command: c.command,
      args: c.args,
      allowUnisolated: c.allowUnisolated,
    }))
    .exhaustive();
}

function addressOf(alloc: Allocation, jobId: string): string {
  const p = alloc.AllocatedResources?.Shared?.Ports.find((x) => x.Label === GRPC_PORT_LABEL);
  if (!p) {
    throw new NomadWorkerError(
      "E_NOMAD_ALLOC_FAILED",
      `allocation ${alloc.ID} of ${jobId} has no '${GRPC_PORT_LABEL}' port`,
      {
        jobId,
        allocId: alloc.ID,
        hint: "the job's network block lost its dynamic port; this is a bug in the job builder",
      },
    );
  }
  const host = p.HostIP.includes(":") ? `[${p.HostIP}]` : p.HostIP;
  return `${host}:${p.Value}`;
}

/**
 * The directory copied into an empty workspace: the backend's `snapshotDir`, else — for raw_exec,
 * which runs on a client sharing this machine's filesystem (a dev agent, the test double) — the
 * spec's own workspace (the runner's fresh fork). Containers bring their workspace in the image.
 */
export function snapshotDirOf(
  o: NomadBackendOptions,
  spec: Pick<WorkerSpec, "workspace">,
): string | undefined {
  return o.snapshotDir ?? (o.driver.driver === "raw_exec" && spec.workspace ? spec.workspace : undefined);
}

/** raw_exec without a backend snapshot dir: the trajectory's own fork, named by its dispatch. Pure. */
export function dispatchSnapshotDir(
  o: NomadBackendOptions,
  spec: Pick<WorkerSpec, "workspace">,
): string | undefined {
  return o.snapshotDir === undefined ? snapshotDirOf(o, spec) : undefined;
}

/**
 * Resources and sandbox of a worker: memory from the spec's limit (the task's profile) plus the
 * measured core for agents (`sizeWorkerMemory`), the rest from the backend's defaults.
 */
export function workerSizing(o: NomadBackendOptions, spec: WorkerSpec) {
  const memory = sizeWorkerMemory({
    agent: spec.agent,
    limitMb: spec.limits.memoryMb,
    reserveMb: o.resources.memoryMb,
  });
  return {
    resources: {
      cpuMhz: o.resources.cpuMhz,
      ...memory,
      diskMb: spec.limits.diskMb ?? o.resources.diskMb,
    },
    sandbox: { ...o.sandbox, pidsLimit: spec.limits.pids },
  };
}

/**
 * The parameterized parent job a worker for `spec` is dispatched from. Pure. Its id carries the
 * run, the task and a hash of the job's shape, so workers with the same spec share one parent.
 * `nomad render` prints exactly this.
 */
export function workerParentJob(
  o: NomadBackendOptions,
  spec: WorkerSpec,
  policyBaseUrl: string,
  nowMs: number,
): Job {
  const { resources, sandbox } = workerSizing(o, spec);
  const base = {
    runId: spec.runId,
    taskId: spec.taskId,
    profile: spec.profile,
    agent: spec.agent,
    driver: workerDriver(o.driver, spec),
    policyBaseUrl,
    datacenters: o.datacenters,
    constraints: o.constraints,
    resources,
    sandbox,
    env: { ...(spec.env ?? {}) },
    ...(o.workspaceDir ? { workspaceDir: o.workspaceDir } : {}),
    // the backend's own snapshot dir is shared; a trajectory's fork travels in its dispatch
    ...(o.snapshotDir
      ? { snapshotDir: o.snapshotDir }
      : dispatchSnapshotDir(o, spec)
        ? { snapshotDirFromDispatch: true }
        : {}),
    maxRunMs: spec.limits.wallClockMs + o.startTimeoutMs + o.graceMs,
    ...(o.namespace ? { namespace: o.namespace } : {}),
    ...(o.region ? { region: o.region } : {}),
    ...(o.nodePool ? { nodePool: o.nodePool } : {}),
  };
  let shape: Job;
  try {
    shape = buildWorkerJob({ ...base, jobId: "x", expiresAtMs: 1 });
  } catch (cause) {
    throw new NomadWorkerError("E_NOMAD_CONFIG", `cannot build the worker job: ${(cause as Error).message}`, {
      cause,
    });
  }
  const id = `${JOB_ID_PREFIX}${idPart(spec.runId, 24)}-${idPart(spec.taskId, 40)}-${spec.agent ? "agent" : "cmd"}-${hash8(shape)}`;
  return buildWorkerJob({ ...base, jobId: id, expiresAtMs: nowMs + o.parentTtlMs });
}

export function createNomadBackend(input: NomadBackendOptionsInput, deps: NomadBackendDeps): NomadBackend {
  const parsed = NomadBackendOptions.safeParse(input);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new NomadWorkerError("E_NOMAD_CONFIG", `nomad backend option '${i.path.join(".")}': ${i.message}`);
  }
  const o = parsed.data;
  const client: NomadClient = deps.client;
  const probe = deps.probe ?? http2Probe;
  const now = deps.now ?? Date.now;
  const progress = deps.onProgress;
  const ns = o.namespace ? { namespace: o.namespace } : {};
  const closing = new AbortController();
  const parents = new ParentJobs(
    client,
    {
      namespace: o.namespace,
      cleanupTimeoutMs: o.cleanupTimeoutMs,
      registerTimeoutMs: Math.min(o.startTimeoutMs, 60_000),
    },
    progress,
  );
  const workers = new Set<NomadWorkerImpl>();
  const swept = new Map<string, Promise<void>>();

  const cleanupOpts = () => ({ timeoutMs: o.cleanupTimeoutMs, timeoutName: "cleanupTimeoutMs", ...ns });

  /** Purges a job; returns the error instead of throwing (cleanup paths). */
  async function purge(jobId: string): Promise<unknown> {
    try {
      await client.jobs.deregister(jobId, { purge: true }, cleanupOpts());
      progress?.({ kind: "purged", jobId });
      return undefined;
    } catch (err) {
      return err;
    }
  }

  function sweepOnce(runId: string, signal?: AbortSignal): Promise<void> {
    let p = swept.get(runId);
    if (!p) {
      p = sweepOrphans(client, { runId, now: now(), namespace: o.namespace, signal: closing.signal }).then(
        (purged) => {
          if (purged.length) progress?.({ kind: "swept", purged });
        },
      );
      p.catch(() => swept.delete(runId));
      swept.set(runId, p);
    }
    return abortable(p, signal);
  }

  const limitsOf = (spec: WorkerSpec) => workerSizing(o, spec);
  const parentJobFor = (spec: WorkerSpec, policyBaseUrl: string) =>
    workerParentJob(o, spec, policyBaseUrl, now());

  class NomadWorkerImpl implements NomadWorker {
    readonly backend = "nomad" as const;
    readonly statelessExec = true;
    readonly id: string;
    private stopped = false;
    private execSeq = 0;
    private readonly execJobs = new Set<string>();
    private readonly watch = new AbortController();
    /** Agent workers: resolves when the allocation ends (or on stop). Never rejects. */
    readonly exited: Promise<WorkerExit> | undefined;

    constructor(
      readonly spec: WorkerSpec,
      readonly parentId: string | undefined,
      readonly jobId: string | undefined,
      readonly allocId: string | undefined,
      readonly agentAddress: string | undefined,
      readonly policyBaseUrl: string | undefined,
      running?: Allocation,
      readonly agentToken?: string,
    ) {
      this.id = jobId ?? `nomad-cmd-${idPart(spec.trajectoryId)}-${randomUUID().slice(0, 8)}`;
      this.exited = running ? watchExit(running, this.watch.signal) : undefined;
    }

    async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
      if (this.stopped) throw new NomadWorkerError("E_NOMAD_CLOSED", `worker ${this.id} is stopped`);
      const started = performance.now();
      const timeoutMs = options.timeoutMs ?? o.execTimeoutMs;
      const spec = this.spec;
      // An exec runs a command, not the core: sized by the spec's limit alone.
      const { resources, sandbox } = limitsOf({ ...spec, agent: false });
      const jobId = `${JOB_ID_PREFIX}${idPart(spec.runId, 24)}-${idPart(spec.trajectoryId, 40)}-exec-${++this.execSeq}-${randomUUID().slice(0, 6)}`;
      using linked = createDeadline({ signals: [options.signal, closing.signal] });
      const signal = linked.signal;
      const job = buildExecJob({
        jobId,
        runId: spec.runId,
        taskId: spec.taskId,
        trajectoryId: spec.trajectoryId,
        profile: spec.profile,
        driver: workerDriver(o.driver, spec),
        command,
        cwd: options.cwd ?? "",
        env: { ...(spec.env ?? {}), ...(options.env ?? {}) },
        datacenters: o.datacenters,
        constraints: o.constraints,
        resources,
        sandbox,
        ...(o.workspaceDir ? { workspaceDir: o.workspaceDir } : {}),
        ...(snapshotDirOf(o, spec) ? { snapshotDir: snapshotDirOf(o, spec) } : {}),
        maxRunMs: timeoutMs + o.graceMs,
        expiresAtMs: now() + timeoutMs + o.graceMs,
        ...(o.namespace ? { namespace: o.namespace } : {}),
        ...(o.region ? { region: o.region } : {}),
        ...(o.nodePool ? { nodePool: o.nodePool } : {}),
      });
      this.execJobs.add(jobId);
      let allocId: string | undefined;
      try {
        // Create-only: a resend after a lost answer fails instead of registering twice.
        await client.jobs.register(job, { enforceIndex: 0, signal, ...ns });
        const deadline = Date.now() + timeoutMs;
        let alloc: Allocation;
        try {
          alloc = await followAllocation(
            {
              client,
              jobId,
              signal,
              deadline,
              pollMs: o.pollMs,
              onProgress: progress,
              purpose: "exec",
              namespace: o.namespace,
            },
            "terminal",
          );
        } catch (err) {
          if (err instanceof NomadWorkerError && err.code === "E_NOMAD_START_TIMEOUT") {
            allocId = err.allocId;
            await purge(jobId);
            const logs = allocId ? await this.readLogs(allocId) : { stdout: "", stderr: "" };
            return {
              exitCode: 137,
              ...logs,
              timedOut: true,
              durationMs: Math.round(performance.now() - started),
              limit: "wall_clock",
            };
          }
          throw err;
        }
        allocId = alloc.ID;
        const exitCode = exitCodeOf(alloc, EXEC_TASK);
        if (exitCode === undefined) throw allocationError(alloc, jobId, "before the command ran");
        const logs = await this.readLogs(alloc.ID, signal);
        return { exitCode, ...logs, timedOut: false, durationMs: Math.round(performance.now() - started) };
      } catch (err) {
        throw wrapAbort(err, options.signal, `exec in worker ${this.id}`);
      } finally {
        await purge(jobId);
        this.execJobs.delete(jobId);
      }
    }

    private collects = 0;

    /** Agent workers: the diff from the supervisor's gate (with the core token) and Cline's files via fs/cat. */
    async collectArtifacts(c: CollectArtifactsInput): Promise<void> {
      if (this.stopped) throw new NomadWorkerError("E_NOMAD_CLOSED", `worker ${this.id} is stopped`);
      if (!this.allocId || !this.agentAddress || !this.agentToken)
        throw new NomadWorkerError(
          "E_NOMAD_ARTIFACTS",
          `worker ${this.id} runs no agent: nothing to collect`,
        );
      await collectFromAllocation(client, this.allocId, c, {
        namespace: o.namespace,
        seq: ++this.collects,
        agentAddress: this.agentAddress,
        agentToken: this.agentToken,
      });
    }

    private async readLogs(
      allocId: string,
      signal?: AbortSignal,
    ): Promise<{ stdout: string; stderr: string }> {
      const read = async (type: "stdout" | "stderr") => {
        try {
          return (
            await client.logs.read(
              allocId,
              { task: EXEC_TASK, type },
              signal ? { signal, ...ns } : cleanupOpts(),
            )
          ).data;
        } catch (err) {
          if (signal?.aborted) throw err;
          return `(flakegym: could not read the task's ${type} from Nomad: ${(err as Error).message})\n`;
        }
      };
      return { stdout: await read("stdout"), stderr: await read("stderr") };
    }

    async stop(): Promise<void> {
      if (this.stopped) return;
      this.stopped = true;
      this.watch.abort();
      workers.delete(this);
      const failures: unknown[] = [];
      for (const id of [...this.execJobs]) {
        const e = await purge(id);
        if (e) failures.push(e);
      }
      if (this.jobId) {
        const e = await purge(this.jobId);
        if (e) failures.push(e);
      }
      if (this.parentId) {
        try {
          await parents.release(this.parentId);
        } catch (e) {
          failures.push(e);
        }
      }
      if (failures.length) {
        throw new NomadWorkerError(
          "E_NOMAD_EXEC",
          `could not purge the Nomad jobs of worker ${this.id}: ${(failures[0] as Error).message}`,
          {
            cause: failures[0],
            hint: `purge it by hand: nomad job stop -purge ${this.jobId ?? this.id}; otherwise the next run's sweep purges it once its flakegym_expires passes`,
          },
        );
      }
    }
  }

  async function startAgent(
    spec: WorkerSpec,
    policyBaseUrl: string,
    signal: AbortSignal | undefined,
  ): Promise<NomadWorker> {
    const t0 = performance.now();
    const deadline = Date.now() + o.startTimeoutMs;
    const parent = parentJobFor(spec, policyBaseUrl);
    const coreToken = randomBytes(32).toString("base64url");
    using linked = createDeadline({ signals: [signal, closing.signal] });
    const combined = linked.signal;
    await parents.acquire(parent, combined);
    const expires = now() + spec.limits.wallClockMs + o.startTimeoutMs + o.graceMs;
    const request = {
      meta: {
        [META.trajectory]: spec.trajectoryId,
        [META.expires]: String(expires),
        // per trajectory: carried by the dispatch, so the parent is one per (image, profile, resources)
        [META.policyUrl]: policyBaseUrl,
        // per worker: the supervisor's gate admits only calls carrying it (docs/nomad.md, Isolation)
        [META.coreToken]: coreToken,
        ...(dispatchSnapshotDir(o, spec) ? { [META.snapshotDir]: dispatchSnapshotDir(o, spec)! } : {}),
      },
      idempotencyToken: `${idPart(spec.trajectoryId, 60)}:${randomUUID()}`,
      idPrefixTemplate: idPart(spec.trajectoryId, 40),
    };
    let childId: string | undefined;
    let dispatchTried = false;
    try {
      dispatchTried = true;
      try {
        childId = (await client.jobs.dispatch(parent.ID, request, { signal: combined, ...ns })).data
          .DispatchedJobID;
      } catch (err) {
        if (!(err instanceof NomadError && /parameterized job not found/.test(err.body))) throw err;
        await parents.reRegister(parent);
        childId = (await client.jobs.dispatch(parent.ID, request, { signal: combined, ...ns })).data
          .DispatchedJobID;
      }
      progress?.({ kind: "dispatched", jobId: childId, trajectoryId: spec.trajectoryId });
      const alloc = await followAllocation(
        {
          client,
          jobId: childId,
          signal: combined,
          deadline,
          pollMs: o.pollMs,
          onProgress: progress,
          purpose: "start",
          namespace: o.namespace,
          stderrTail,
        },
        "running",
      );
      const address = addressOf(alloc, childId);
      await waitUntilAnswering(childId, alloc, address, deadline, combined);
      progress?.({ kind: "ready", jobId: childId, address, ms: Math.round(performance.now() - t0) });
      const w = new NomadWorkerImpl(
        spec,
        parent.ID,
        childId,
        alloc.ID,
        address,
        policyBaseUrl,
        alloc,
        coreToken,
      );
      workers.add(w);
      return w;
    } catch (err) {
      if (childId === undefined && dispatchTried) {
        // The dispatch may have reached Nomad with its answer lost: the same token returns the
        // child it created (or creates one), which we then purge.
        try {
          childId = (await client.jobs.dispatch(parent.ID, request, cleanupOpts())).data.DispatchedJobID;
        } catch {
          // nothing was created, or Nomad is unreachable: the sweep will find it by expiry
        }
      }
      if (childId !== undefined) await purge(childId);
      await parents.release(parent.ID).catch(() => {});
      throw wrapAbort(err, signal, `starting a Nomad worker for trajectory ${spec.trajectoryId}`);
    }
  }

  async function waitUntilAnswering(
    jobId: string,
    alloc: Allocation,
    address: string,
    deadline: number,
    signal: AbortSignal,
  ) {
    const watcher = watchAllocation(client, alloc, o.pollMs, o.namespace);
    try {
      for (;;) {
        if (signal.aborted) throw signal.reason;
        const cur = watcher.latest();
        if (isTerminal(cur))
          throw allocationError(cur, jobId, "before its core answered", await stderrTail(cur.ID));
        if (Date.now() > deadline) {
          throw new NomadWorkerError(
            "E_NOMAD_NOT_READY",
            `job ${jobId}: allocation ${alloc.ID} runs, but nothing answered gRPC at ${address} within ${o.startTimeoutMs} ms`,
            {
              jobId,
              allocId: alloc.ID,
              hint: `the worker must start the Cline core listening on 0.0.0.0:$NOMAD_PORT_${GRPC_PORT_LABEL} (PROTOBUS_ADDRESS); read 'nomad alloc logs -stderr ${alloc.ID}'. If it listens, check that this machine can reach ${address} (firewall between runner and client)`,
            },
          );
        }
        if (await probe(address, { signal, timeoutMs: 2_000 })) return;
        await sleep(o.probeIntervalMs, signal);
      }
    } finally {
      await watcher.stop();
    }
  }

  /**
   * Follows a running allocation until it ends and says why: Nomad's max_run_duration (the wall
   * clock), an OOM kill, a lost node or any other end. Resolves "stopped" once `signal` aborts.
   */
  async function watchExit(alloc: Allocation, signal: AbortSignal): Promise<WorkerExit> {
    let latest = alloc;
    let index = alloc.ModifyIndex;
    while (!signal.aborted) {
      if (isTerminal(latest)) return exitOf(latest);
      try {
        const r = await client.allocations.info(alloc.ID, { signal, index, waitMs: o.pollMs, ...ns });
        latest = r.data;
        index = r.meta.index ?? index;
      } catch {
        if (signal.aborted) break;
        await sleep(Math.min(o.pollMs, 5_000), signal);
      }
    }
    return { reason: "stopped" };
  }

  async function stderrTail(allocId: string): Promise<string | undefined> {
    try {
      const r = await client.logs.read(allocId, { task: WORKER_TASK, type: "stderr" }, cleanupOpts());
      const lines = r.data.trimEnd().split("\n");
      return lines.length && r.data.trim() ? lines.slice(-20).join("\n") : undefined;
    } catch {
      return undefined;
    }
  }

  return {
    kind: "nomad",
    async start(spec, signal) {
      if (closing.signal.aborted) throw new NomadWorkerError("E_NOMAD_CLOSED", "the nomad backend is closed");
      const policyBaseUrl = spec.agent ? resolvePolicyBaseUrl(spec.gateway, o.gatewayAdvertise) : undefined;
      if (!spec.agent) workerDriver(o.driver, spec); // fail now, not at the first exec
      try {
        await sweepOnce(spec.runId, signal);
      } catch (err) {
        throw wrapAbort(err, signal, "sweeping orphaned flakegym jobs");
      }
      if (!spec.agent) {
        const w = new NomadWorkerImpl(spec, undefined, undefined, undefined, undefined, undefined);
        workers.add(w);
        return w;
      }
      return await startAgent(spec, policyBaseUrl!, signal);
    },
    async describe() {
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
    },
    async close() {
      if (!closing.signal.aborted)
        closing.abort(new NomadWorkerError("E_NOMAD_CLOSED", "the nomad backend is closing"));
      await Promise.allSettled([...workers].map((w) => w.stop()));
      await parents.purgeAll();
      await Promise.allSettled([...swept.values()]);
    },
    liveJobs() {
      const ids = new Set(parents.ids());
      for (const w of workers) if (w.jobId) ids.add(w.jobId);
      return [...ids];
    },
  };
}

/** Why an allocation ended, as the worker contract says it. */
export function exitOf(alloc: Allocation): WorkerExit {
  const events = Object.values(alloc.TaskStates).flatMap((s) => s.Events);
  const oom = events.some((e) => e.Type === "Terminated" && e.Details.oom_killed === "true");
  const lines = describeTaskEvents(alloc).slice(-6).join("; ");
  if (/max_run_duration/.test(alloc.ClientDescription ?? "")) {
    return { reason: "wall_clock", detail: `allocation ${alloc.ID}: ${alloc.ClientDescription}` };
  }
  if (oom) return { reason: "memory", detail: `allocation ${alloc.ID} was killed for memory: ${lines}` };
  return {
    reason: "crashed",
    detail: `allocation ${alloc.ID} is ${alloc.ClientStatus} (${alloc.ClientDescription ?? ""}): ${lines}`,
  };
}

/** An abort (Ctrl-C) stays recognisable as one; everything else is passed through. */
function wrapAbort(err: unknown, signal: AbortSignal | undefined, what: string): unknown {
  if (signal?.aborted) {
    const reason = signal.reason;
    if (reason instanceof FlakegymError) return reason;
    return new FlakegymError("E_INTERRUPTED", `${what}: interrupted`, { cause: err });
  }
  return err;
}
