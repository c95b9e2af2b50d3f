import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createClineClient, runClineTask } from "@flakegym/cline-vendor";
import { createDeadline } from "@flakegym/nomad-jobs";
import { FlakegymError } from "../errors.js";
import type { GatewayTerminal, PolicyGateway, TrajectoryStatus } from "../gateway/types.js";
import { trajectorySampling } from "../policy/sampling.js";
import { type PolicySpec, parsePolicySpec, samplingOf } from "../policy/spec.js";
import type { PolicyUpstream } from "../policy/upstream.js";
import { redactTree } from "../run-format/redact-tree.js";
import type { Counts, Outcome, RunConfig } from "../run-format/schema.js";
import { baseCommitOf, type Snapshot } from "../snapshots/manifest.js";
import { exitWithin } from "../workers/exit-within.js";
import type { Worker, WorkerBackend, WorkerExit, WorkerSpec } from "../workers/types.js";
import { classifyOutcome, gatewayVerdictOf, workerExitGraceMs } from "./classify-outcome.js";
import type { AgentAttempt, AgentInput } from "./deps.js";
import { agentPhaseCpuOf } from "./phase-cpu.js";
import { type forkIn, releaseFork } from "./wire-forks.js";

/**
 * One agent attempt: a fresh fork, the trajectory's gateway route, a worker with the Cline core,
 * the Cline task, the outcome classified, the artifacts collected; everything stopped and released.
 */

type AttemptFork = Awaited<ReturnType<typeof forkIn>>;

/** What an attempt is run with, made by the wiring (wire.ts). */
export interface AgentAttemptContext {
  readonly config: RunConfig;
  readonly gateway: PolicyGateway;
  readonly backend: WorkerBackend;
  readonly snapshot: Snapshot;
  /** The attempt's upstream, made before anything there is to clean up. */
  readonly upstream: PolicyUpstream;
  /** A fresh fork of the snapshot for this attempt. */
  fork(name: string): Promise<AttemptFork>;
  /** The agent worker's spec on `fork`, its policy at `url`. */
  workerSpec(fork: AttemptFork, url: string): WorkerSpec;
  readonly keepWorkspace?: ((workspace: string) => Promise<void>) | undefined;
  readonly onNote?: ((message: string) => void) | undefined;
}

/** The model id the core is configured with for plan-replaying policies (unknown → XML tools). */
export const SCRIPTED_MODEL_ID = "flakegym-scripted";

/** The model id the core is configured with: the model's own, else the scripted one. Pure. */
export function modelIdOf(spec: PolicySpec): string {
  return spec.kind === "openai" || spec.kind === "anthropic" ? spec.model : SCRIPTED_MODEL_ID;
}

/**
 * The gateway's limits of a trajectory's route registered at `nowMs`: its time ends a wall clock
 * later (counted from before the boot, so a little early: a Retry-After near the end is not waited). Pure.
 */
export function routeLimitsOf(
  limits: RunConfig["limits"],
  nowMs: number,
): {
  maxRequests: number;
  deadlineAt: number;
  silenceTimeoutMs?: number;
  maxResponseBytes?: number;
} {
  return {
    maxRequests: limits.maxTurns,
    deadlineAt: nowMs + limits.timeoutMs,
    ...(limits.modelSilenceMs !== undefined ? { silenceTimeoutMs: limits.modelSilenceMs } : {}),
    ...(limits.maxResponseBytes !== undefined ? { maxResponseBytes: limits.maxResponseBytes } : {}),
  };
}

/** The Cline driver's limits of a trajectory's task. Pure. */
export function driverLimitsOf(limits: RunConfig["limits"]): {
  wallClockMs: number;
  maxModelRequests: number;
  idleMs?: number;
} {
  return {
    wallClockMs: limits.timeoutMs,
    maxModelRequests: limits.maxTurns,
    ...(limits.idleMs !== undefined ? { idleMs: limits.idleMs } : {}),
  };
}

/** How the worker came up, for the "agent" phase (undefined: the backend does not say). Pure. */
export function bootDetailOf(pooled: boolean | undefined): string | undefined {
  return pooled === undefined ? undefined : pooled ? "pooled worker" : "cold boot";
}

/** The attempt's counts: the gateway's when it has the route, else the driver's request count. Pure. */
export function attemptCountsOf(status: TrajectoryStatus | undefined, modelRequests: number): Counts {
  return {
    turns: status?.ok ?? modelRequests,
    tokensIn: status?.promptTokens ?? 0,
    tokensOut: status?.completionTokens ?? 0,
  };
}

/**
 * The outcome of an attempt whose artifacts could not be collected: a trajectory a limit ended is
 * data even when the dead worker's files cannot be read; undefined when the attempt must fail
 * (an infra fault, or the run was aborted). Pure.
 */
export function uncollectedOutcome(outcome: Outcome, message: string, aborted: boolean): Outcome | undefined {
  if (outcome.kind === "infra_error" || aborted) return undefined;
  return { ...outcome, detail: `${outcome.detail}; artifacts not collected: ${message}` };
}

/**
 * Copies the Cline session and the diff out of the worker into `<dir>/cline` (redacted); the
 * outcome, or what it becomes when the artifacts could not be collected.
 */
async function collectArtifacts(
  worker: Worker,
  run: Awaited<ReturnType<typeof runClineTask>>,
  outcome: Outcome,
  input: AgentInput,
  snapshot: AgentAttemptContext["snapshot"],
): Promise<Outcome> {
  if (!worker.collectArtifacts) {
    throw new FlakegymError(
      "E_WORKER",
      `worker ${worker.id} (${worker.backend}) cannot hand back its artifacts (no collectArtifacts)`,
    );
  }
  try {
    await worker.collectArtifacts({
      taskId: run.taskId,
      dest: join(input.dir, "cline"),
      baseCommit: baseCommitOf(snapshot.manifest),
      baseObjects: join(snapshot.workspace, ".git", "objects"),
      extra: { "outcome.json": outcome, "timings.json": run.timings, "counts.json": run.counts },
      signal: input.signal,
    });
    // the copied files cross the secrets boundary too (the Cline session saw the agent's side)
    await redactTree(join(input.dir, "cline"));
    return outcome;
  } catch (err) {
    const kept = uncollectedOutcome(outcome, (err as Error).message, input.signal.aborted);
    if (!kept) throw err;
    return kept;
  }
}

/** A worker's exit once it came, and a signal that aborts then (naming why it ended). */
function watchExit(worker: Worker): { signal: AbortSignal; exit: () => WorkerExit | undefined } {
  const ac = new AbortController();
  let exit: WorkerExit | undefined;
  void worker.exited?.then((e) => {
    exit = e;
    ac.abort(
      new FlakegymError("E_WORKER_EXIT", `worker ended: ${e.reason}${e.detail ? ` (${e.detail})` : ""}`),
    );
  });
  return { signal: ac.signal, exit: () => exit };
}

/**
 * Cline driven through `client` until its task ends; with whether the driver approved a command of
 * the agent's (who could reach the core: classify-outcome.ts) and each turn's start reported.
 */
async function driveCline(a: {
  readonly client: ReturnType<typeof createClineClient>;
  readonly prompt: string;
  readonly policyBaseUrl: string;
  readonly apiKey: string;
  readonly modelId: string;
  readonly config: AgentAttemptContext["config"];
  readonly signal: AbortSignal;
  readonly onTurn?: (n: number) => void;
}): Promise<{ run: Awaited<ReturnType<typeof runClineTask>>; commandsRan: boolean }> {
  let turns = 0;
  let commandsRan = false;
  const run = await runClineTask({
    client: a.client,
    prompt: a.prompt,
    provider: {
      kind: "openai",
      baseUrl: a.policyBaseUrl,
      apiKey: a.apiKey,
      modelId: a.modelId,
      ...(a.config.contextWindow !== undefined ? { contextWindow: a.config.contextWindow } : {}),
    },
    limits: driverLimitsOf(a.config.limits),
    signal: a.signal,
    onEvent: (e) => {
      if (e.type === "turn_started") a.onTurn?.(++turns);
      if (e.type === "ask" && e.ask === "command" && e.decision === "approve") commandsRan = true;
    },
  });
  return { run, commandsRan };
}

export async function runAgentAttempt(ctx: AgentAttemptContext, input: AgentInput): Promise<AgentAttempt> {
  const { config, gateway, backend, snapshot } = ctx;
  const id = input.slot.trajectoryId;
  const spec = parsePolicySpec(input.slot.policy);
  let forkMs = 0;
  let bootMs = 0;
  let bootOk = false;
  input.onPhase?.("forking");
  const f = await ctx.fork(id);
  forkMs = Math.round(f.forkMs);
  let worker: Worker | undefined;
  // how the trajectory ended, once known: a reusable worker is handed back with it (--reuse)
  let ended: Outcome["kind"] | undefined;
  try {
    await gateway.unregister(id); // a previous attempt of this trajectory
    const sampling = samplingOf(input.slot.policy);
    const route = gateway.register(id, {
      upstream: ctx.upstream,
      ...(sampling ? { sampling: trajectorySampling(sampling, input.slot.index) } : {}),
      limits: routeLimitsOf(config.limits, Date.now()),
      turnLogPath: join(input.dir, "turns.jsonl"),
    });
    input.onPhase?.("booting");
    const t0 = performance.now();
    worker = await backend.start(ctx.workerSpec(f, route.baseUrlsFor("http://gateway").openai), input.signal);
    bootMs = Math.round(performance.now() - t0);
    bootOk = true;
    const cpuAtAssign = await worker.cpuSeconds?.();
    if (!worker.agentAddress || !worker.policyBaseUrl) {
      throw new FlakegymError("E_WORKER", `worker ${worker.id} started without an agent address`);
    }
    input.onPhase?.("agent", bootDetailOf(worker.pooled));
    const client = createClineClient({
      address: worker.agentAddress,
      ...(worker.agentToken ? { token: worker.agentToken } : {}),
    });
    const exitWatch = watchExit(worker);
    // the worker's exit as it stood when the gateway ended the trajectory (classify-outcome.ts causeOf)
    let exitAtTerminal: WorkerExit | undefined;
    route.signal.addEventListener("abort", () => (exitAtTerminal = exitWatch.exit()), { once: true });
    using linked = createDeadline({ signals: [input.signal, route.signal, exitWatch.signal] });
    const { run, commandsRan } = await driveCline({
      client,
      prompt: input.task.prompt,
      policyBaseUrl: worker.policyBaseUrl,
      apiKey: route.token,
      modelId: modelIdOf(spec),
      config,
      signal: linked.signal,
      ...(input.onTurn ? { onTurn: input.onTurn } : {}),
    });
    client.close();
    const phaseCpu = agentPhaseCpuOf(cpuAtAssign, await worker.cpuSeconds?.());
    input.signal.throwIfAborted();
    // the gateway's thread died: an infra fault (retried), not a verdict on the trajectory
    if (route.signal.aborted && route.signal.reason instanceof Error) throw route.signal.reason;
    const terminal = route.signal.aborted ? (route.signal.reason as GatewayTerminal) : undefined;
    // a limit kill reaches the core first (a dead stream): give the worker a moment to say why —
    // unless the gateway ended the trajectory first: then a later worker exit is not the cause
    const workerExit = terminal
      ? exitAtTerminal
      : (exitWatch.exit() ?? (await exitWithin(worker, workerExitGraceMs(run.outcome))));
    // the route is done: its final counts come with its release, awaited (the gateway's synchronous
    // status() holds the event loop until the gateway thread answers: with a thousand trajectories
    // at once, for as long as the thread is busy); its last answered call comes with them, so the
    // turn log (the whole conversation, again each call) is not read back and parsed here
    const final = await gateway.unregister(id);
    const answered = final?.lastAnswered;
    let outcome: Outcome = classifyOutcome({
      driver: run.outcome,
      ...(workerExit ? { workerExit } : {}),
      gateway: gatewayVerdictOf(terminal, answered ? [answered] : []),
      ...(worker.agentUsers ? { reach: { users: worker.agentUsers, commandsRan } } : {}),
    });
    input.onPhase?.("collecting");
    outcome = await collectArtifacts(worker, run, outcome, input, snapshot);
    ended = outcome.kind;
    const diff = await readFile(join(input.dir, "cline", "diff.patch"), "utf8").catch(() => "");
    return {
      outcome,
      ...(run.taskId ? { clineTaskId: run.taskId } : {}),
      bootOk,
      ...(worker.pooled !== undefined ? { pooledWorker: worker.pooled } : {}),
      forkMs,
      bootMs,
      agentMs: Math.round(run.timings.totalMs),
      ...phaseCpu,
      counts: attemptCountsOf(final, run.counts.modelRequests),
      diff,
    };
  } finally {
    await (worker?.release ? worker.release(ended) : worker?.stop())?.catch(() => {});
    await gateway.unregister(id).catch(() => undefined);
    // no fork on this host (a remote worker's own workspace): there is no workspace here to keep
    if (f.method !== "none")
      await ctx.keepWorkspace?.(f.workspace).catch((err) => ctx.onNote?.(`keep workspace: ${err}`));
    else if (ctx.keepWorkspace) ctx.onNote?.(`keep workspace: ${id} ran on a remote worker; nothing kept`);
    await releaseFork(f, ctx.onNote);
  }
}
