import { randomUUID } from "node:crypto";
import {
  type Allocation,
  buildExecJob,
  createDeadline,
  EXEC_TASK,
  idPart,
  JOB_ID_PREFIX,
  type Job,
} from "@flakegym/nomad-jobs";
import type { CollectArtifactsInput, ExecOptions, ExecResult, WorkerExit, WorkerSpec } from "../types.js";
import { allocationError, exitCodeOf, followAllocation, killedByNomad } from "./allocation.js";
import { collectFromAllocation } from "./artifacts.js";
import {
  cleanupOpts,
  type NomadBackendState,
  type NomadWorker,
  purge,
  watchExit,
  wrapAbort,
} from "./backend-state.js";
import { NomadWorkerError } from "./errors.js";
import { snapshotDirOf, workerDriver, workerSizing } from "./job-shape.js";

/** Where a Nomad worker runs its core, when it runs one (agent workers). */
export interface NomadAgentPlace {
  readonly parentId: string;
  readonly jobId: string;
  readonly alloc: Allocation;
  readonly agentAddress: string;
  readonly policyBaseUrl: string;
  readonly agentToken: string;
}

/** The one-shot batch job of an exec: the command in a fresh allocation of the worker's image (pure). */
export function execJobOf(
  o: NomadBackendState["o"],
  spec: WorkerSpec,
  c: { jobId: string; command: string; options: ExecOptions; timeoutMs: number; nowMs: number },
): Job {
  // An exec runs a command, not the core: sized by the spec's limit alone.
  const { resources, sandbox } = workerSizing(o, { ...spec, agent: false });
  const snapshotDir = snapshotDirOf(o, spec);
  return buildExecJob({
    jobId: c.jobId,
    runId: spec.runId,
    taskId: spec.taskId,
    trajectoryId: spec.trajectoryId,
    profile: spec.profile,
    driver: workerDriver(o.driver, spec),
    command: c.command,
    cwd: c.options.cwd ?? "",
    env: { ...(spec.env ?? {}), ...(c.options.env ?? {}) },
    datacenters: o.datacenters,
    constraints: o.constraints,
    resources,
    sandbox,
    ...(o.workspaceDir ? { workspaceDir: o.workspaceDir } : {}),
    ...(snapshotDir ? { snapshotDir } : {}),
    maxRunMs: c.timeoutMs + o.graceMs,
    expiresAtMs: c.nowMs + c.timeoutMs + o.graceMs,
    ...(o.namespace ? { namespace: o.namespace } : {}),
    ...(o.region ? { region: o.region } : {}),
    ...(o.nodePool ? { nodePool: o.nodePool } : {}),
  });
}

/**
 * One worker of the Nomad backend: an agent's dispatched allocation (its core, its exit watched),
 * or a command-only worker; either way `exec` runs each command as a job of its own.
 */
export class NomadWorkerImpl implements NomadWorker {
  readonly backend = "nomad" as const;
  readonly statelessExec = true;
  readonly id: string;
  readonly parentId: string | undefined;
  readonly jobId: string | undefined;
  readonly allocId: string | undefined;
  readonly agentAddress: string | undefined;
  readonly policyBaseUrl: string | undefined;
  readonly agentToken: string | undefined;
  private stopped = false;
  private execSeq = 0;
  private collects = 0;
  private readonly execJobs = new Set<string>();
  private readonly watch = new AbortController();
  /** Agent workers: resolves when the allocation ends (or on stop). Never rejects. */
  readonly exited: Promise<WorkerExit> | undefined;

  constructor(
    private readonly st: NomadBackendState,
    readonly spec: WorkerSpec,
    place?: NomadAgentPlace,
  ) {
    this.parentId = place?.parentId;
    this.jobId = place?.jobId;
    this.allocId = place?.alloc.ID;
    this.agentAddress = place?.agentAddress;
    this.policyBaseUrl = place?.policyBaseUrl;
    this.agentToken = place?.agentToken;
    this.id = this.jobId ?? `nomad-cmd-${idPart(spec.trajectoryId)}-${randomUUID().slice(0, 8)}`;
    this.exited = place ? watchExit(st, place.alloc, this.watch.signal) : undefined;
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.stopped) throw new NomadWorkerError("E_NOMAD_CLOSED", `worker ${this.id} is stopped`);
    const { st, spec } = this;
    const started = performance.now();
    const timeoutMs = options.timeoutMs ?? st.o.execTimeoutMs;
    const jobId = `${JOB_ID_PREFIX}${idPart(spec.runId, 24)}-${idPart(spec.trajectoryId, 40)}-exec-${++this.execSeq}-${randomUUID().slice(0, 6)}`;
    using linked = createDeadline({ signals: [options.signal, st.closing.signal] });
    const job = execJobOf(st.o, spec, { jobId, command, options, timeoutMs, nowMs: st.now() });
    this.execJobs.add(jobId);
    try {
      // Create-only: a resend after a lost answer fails instead of registering twice.
      await st.client.jobs.register(job, { enforceIndex: 0, signal: linked.signal, ...st.ns });
      return await this.followExec(jobId, linked.signal, timeoutMs, started);
    } catch (err) {
      throw wrapAbort(err, options.signal, `exec in worker ${this.id}`);
    } finally {
      await purge(st, jobId);
      this.execJobs.delete(jobId);
    }
  }

  /** Follows an exec's job to its end: its exit code and logs, or a timeout with what it printed. */
  private async followExec(
    jobId: string,
    signal: AbortSignal,
    timeoutMs: number,
    started: number,
  ): Promise<ExecResult> {
    const { st } = this;
    let alloc: Allocation;
    try {
      alloc = await followAllocation(
        {
          client: st.client,
          jobId,
          signal,
          deadline: Date.now() + timeoutMs,
          pollMs: st.o.pollMs,
          onProgress: st.progress,
          purpose: "exec",
          namespace: st.o.namespace,
        },
        "terminal",
      );
    } catch (err) {
      if (!(err instanceof NomadWorkerError && err.code === "E_NOMAD_START_TIMEOUT")) throw err;
      await purge(st, jobId);
      const logs = err.allocId ? await this.readLogs(err.allocId) : { stdout: "", stderr: "" };
      return {
        exitCode: 137,
        ...logs,
        timedOut: true,
        durationMs: Math.round(performance.now() - started),
        limit: "wall_clock",
      };
    }
    const exitCode = exitCodeOf(alloc, EXEC_TASK);
    if (exitCode === undefined) throw allocationError(alloc, jobId, "before the command ran");
    const logs = await this.readLogs(alloc.ID, signal);
    return {
      exitCode,
      ...logs,
      timedOut: false,
      durationMs: Math.round(performance.now() - started),
      ...(exitCode !== 0 && killedByNomad(alloc, EXEC_TASK) ? { sandboxKilled: true } : {}),
    };
  }

  /** Agent workers: the diff from the supervisor's gate (with the core token) and Cline's files via fs/cat. */
  async collectArtifacts(c: CollectArtifactsInput): Promise<void> {
    if (this.stopped) throw new NomadWorkerError("E_NOMAD_CLOSED", `worker ${this.id} is stopped`);
    if (!this.allocId || !this.agentAddress || !this.agentToken)
      throw new NomadWorkerError("E_NOMAD_ARTIFACTS", `worker ${this.id} runs no agent: nothing to collect`);
    await collectFromAllocation(this.st.client, this.allocId, c, {
      namespace: this.st.o.namespace,
      seq: ++this.collects,
      agentAddress: this.agentAddress,
      agentToken: this.agentToken,
    });
  }

  private async readLogs(allocId: string, signal?: AbortSignal): Promise<{ stdout: string; stderr: string }> {
    const { st } = this;
    const read = async (type: "stdout" | "stderr") => {
      try {
        return (
          await st.client.logs.read(
            allocId,
            { task: EXEC_TASK, type },
            signal ? { signal, ...st.ns } : cleanupOpts(st),
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
    this.st.workers.delete(this);
    const failures: unknown[] = [];
    for (const id of [...this.execJobs, ...(this.jobId ? [this.jobId] : [])]) {
      const e = await purge(this.st, id);
      if (e) failures.push(e);
    }
    if (this.parentId) {
      try {
        await this.st.parents.release(this.parentId);
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
