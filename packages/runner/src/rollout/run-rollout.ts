import { setMaxListeners } from "node:events";
import { mkdir, readdir, readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { createAtroposClient } from "../emit/atropos/client.js";
import { type AtroposEmitter, createAtroposEmitter, markedGroups } from "../emit/atropos/emitter.js";
import { buildGroup, type GroupLine, groupId, toScoredDataGroup } from "../emit/group.js";
import { appendJsonLine, writeFileAtomic, writeJsonAtomic } from "../emit/jsonl.js";
import { FlakegymError, UsageError } from "../errors.js";
import type { ProgressSink } from "../progress/events.js";
import { ScoringSetupError } from "../scoring/scorer.js";
import { FLAKEGYM_VERSION } from "../version.js";
import type { AgentAttempt, RolloutDeps, RolloutTask, SnapshotRef } from "./deps.js";
import { planRun, type TrajectorySlot } from "./plan.js";
import { runningStorePath } from "./provenance.js";
import { type AttemptEnd, isRetryable, shouldRetry } from "./retry.js";
import {
  cleanTrajectory,
  type RunPaths,
  readGroups,
  readManifest,
  readRunState,
  runPaths,
  writeManifest,
} from "./run-dir.js";
import type {
  MetricsLine,
  Outcome,
  RunConfig,
  RunManifest,
  SampleLine,
  Score,
  TrajectoryResult,
} from "./schema.js";
import { createSemaphore } from "./semaphore.js";
import {
  countOutcomes,
  type RunDatasetSummary,
  type RunSummary,
  renderSummary,
  runDurationMs,
  summarizeTask,
} from "./summary.js";

export interface RolloutOptions {
  /** The run directory. */
  readonly out: string;
  /** Continue the run in `out` (its run.json holds the config) instead of starting one. */
  readonly resume: boolean;
  /** The config of a new run (ignored when resuming, except `concurrency`, `maxInfraRetries`, `atropos`). */
  readonly config: RunConfig;
  readonly runId: string;
  readonly deps: RolloutDeps;
  readonly progress: ProgressSink;
  readonly signal: AbortSignal;
  /** With `--dataset`: what the run took from the file, for summary.json. */
  readonly dataset?: RunDatasetSummary;
  /** Atropos polling cadence (Atropos itself uses 1 s). */
  readonly atroposPollMs?: number;
}

export interface RolloutResult {
  readonly summary: RunSummary;
  readonly lines: string[];
}

const isAbort = (signal: AbortSignal, err: unknown) =>
  signal.aborted || (err as Error)?.name === "AbortError";

async function moveToAttempt(p: RunPaths, id: string, attempt: number): Promise<void> {
  const t = p.trajectory(id);
  const dest = join(t.attempts, String(attempt));
  await mkdir(dest, { recursive: true });
  for (const name of await readdir(t.dir)) {
    if (name === "attempts") continue;
    await rename(join(t.dir, name), join(dest, name));
  }
}

/** Creates the run directory; `--out` naming a file (or a path through one) is a usage error. */
async function ensureOutDir(dir: string): Promise<void> {
  try {
    await mkdir(dir, { recursive: true });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EEXIST" || code === "ENOTDIR") {
      throw new UsageError(
        `the output directory ${dir} cannot be created: it (or one of its parents) is a file`,
        "pass --out <dir> naming a new or empty directory",
      );
    }
    throw err;
  }
}

/** The duration stored by an earlier session of this run (undefined when there is no summary). */
async function priorDurationMs(file: string): Promise<number | undefined> {
  try {
    const d = (JSON.parse(await readFile(file, "utf8")) as { durationMs?: unknown }).durationMs;
    return typeof d === "number" && Number.isFinite(d) ? d : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Runs (or resumes) a rollout: for each task, the snapshot, `groupSize` trajectories under a global
 * concurrency cap, scoring in fresh forks, the group, and the outputs. Every finished trajectory is
 * written before anything that depends on it; an interrupted run keeps what finished.
 */
export async function runRollout(o: RolloutOptions): Promise<RolloutResult> {
  const started = Date.now();
  const p = runPaths(o.out);
  const { deps, signal, progress } = o;
  // every worker, wait and watchdog of the run listens on this one signal
  setMaxListeners(0, signal);
  let manifest: RunManifest;
  if (o.resume) {
    const stored = await readManifest(p);
    manifest = {
      ...stored,
      config: {
        ...stored.config,
        concurrency: o.config.concurrency,
        maxInfraRetries: o.config.maxInfraRetries,
        // `--resume --atropos <url>`: a new run-api (the CLI keeps the stored one otherwise)
        ...(o.config.atropos ? { atropos: o.config.atropos } : {}),
      },
    };
  } else {
    await ensureOutDir(p.dir);
    const existing = await readdir(p.dir);
    if (existing.length > 0) {
      throw new FlakegymError("E_OUT_EXISTS", `the output directory ${p.dir} is not empty`, {
        hint: `continue that run with --resume ${p.dir}, or pick another --out`,
      });
    }
    const prov = await deps.provenance();
    const storePath = runningStorePath();
    manifest = {
      version: 1,
      runId: o.runId,
      createdAt: new Date().toISOString(),
      config: o.config,
      provenance: {
        flakegymVersion: FLAKEGYM_VERSION,
        cline: prov.cline,
        node: process.version,
        ...(storePath ? { nixStorePath: storePath } : {}),
        ...(prov.imageDigest ? { imageDigest: prov.imageDigest } : {}),
      },
      tasks: Object.fromEntries(o.config.tasks.map((t) => [t, {}])),
    };
  }
  const cfg = manifest.config;
  await mkdir(p.trajectories, { recursive: true });
  let manifestChain = writeManifest(p, manifest);
  const saveManifest = () => {
    manifestChain = manifestChain.then(() => writeManifest(p, manifest));
    return manifestChain;
  };
  await manifestChain;

  // what is already there (resume truncates torn JSONL tails first)
  const state = await readRunState(p, { repair: o.resume });
  if (state.tornBytes > 0)
    progress({ type: "note", message: `resume: dropped ${state.tornBytes} bytes of torn lines` });
  const plan = planRun(cfg, state);
  const prior = o.resume ? await priorDurationMs(p.summary) : undefined;
  let didWork =
    plan.toRun.length + plan.clean.length + plan.groupsMissing.length > 0 ||
    plan.metricsMissing.length + plan.samplesMissing.length > 0;
  for (const id of plan.clean) await cleanTrajectory(p, id);
  const results = new Map(state.results);

  const metricsLine = (r: TrajectoryResult): MetricsLine => ({
    task_id: r.taskId,
    trajectory_id: r.trajectoryId,
    snapshot_ms: r.timings.snapshotMs,
    fork_ms: r.timings.forkMs,
    boot_ms: r.timings.bootMs,
    agent_ms: r.timings.agentMs,
    score_ms: r.timings.scoreMs,
    boot_ok: r.bootOk,
    ...(r.pooledWorker !== undefined ? { pooled_worker: r.pooledWorker } : {}),
    outcome: r.outcome.kind,
    ...("limit" in r.outcome ? { limit: r.outcome.limit } : {}),
    outcome_detail: r.outcome.detail,
    reward: r.reward,
    turns: r.counts.turns,
    tokens_in: r.counts.tokensIn,
    tokens_out: r.counts.tokensOut,
    infra_retries: r.infraRetries.length,
    ...(r.score?.tampered?.length ? { tampered: r.score.tampered } : {}),
  });
  const sampleLine = async (r: TrajectoryResult): Promise<SampleLine> => ({
    prompt: r.prompt,
    completion: await readFile(p.trajectory(r.trajectoryId).diff, "utf8").catch(() => ""),
    reward: r.reward as number,
    task_id: r.taskId,
    trajectory_id: r.trajectoryId,
  });
  for (const id of plan.metricsMissing) await appendJsonLine(p.metrics, metricsLine(results.get(id)!));
  for (const id of plan.samplesMissing) await appendJsonLine(p.samples, await sampleLine(results.get(id)!));

  // Atropos: one sender, groups pushed in order; a group it cannot send stays pending on disk
  let emitter: AtroposEmitter | undefined;
  let sendChain: Promise<void> = Promise.resolve();
  const atroposStatus = new Map<string, "sent" | "dropped" | "pending">();
  if (cfg.atropos) {
    const a = cfg.atropos;
    emitter = createAtroposEmitter({
      client: createAtroposClient({ url: a.url }),
      register: {
        max_token_length: a.maxTokenLength,
        desired_name: a.name,
        weight: 1,
        group_size: cfg.groupSize,
      },
      dropEqualScores: a.dropEqualScores,
      maxBatchesOffpolicy: a.maxBatchesOffpolicy,
      markFile: p.atroposMarks,
      pollMs: o.atroposPollMs ?? 1000,
      waitMs: a.waitMs,
      attempts: 3,
      backoffMs: 1000,
      onEvent: (message) => progress({ type: "note", message }),
    });
    for (const [gid, m] of await markedGroups(p.atroposMarks)) atroposStatus.set(gid, m.status);
  }
  const send = (line: GroupLine) => {
    if (!emitter) return;
    const gid = String(line.group_overrides?.group_id);
    if (atroposStatus.get(gid) === "sent" || atroposStatus.get(gid) === "dropped") return;
    didWork = true;
    sendChain = sendChain.then(async () => {
      const sdg = toScoredDataGroup(line);
      if (!sdg) {
        atroposStatus.set(gid, "pending");
        return;
      }
      try {
        const r = await emitter!.push(gid, sdg, signal);
        atroposStatus.set(gid, r.status);
        progress({
          type: "note",
          message: `atropos: group ${gid} ${r.status}${r.status === "sent" ? "" : `: ${"detail" in r ? r.detail : ""}`}`,
        });
      } catch (err) {
        atroposStatus.set(gid, "pending");
        if (!isAbort(signal, err))
          progress({ type: "note", message: `atropos: group ${gid} pending: ${(err as Error).message}` });
      }
    });
  };

  const sem = createSemaphore(cfg.concurrency);
  const snapLimiter = createSemaphore(1);
  const groupsWritten = new Set(state.groupTasks);

  const provenanceOf = (taskId: string) => ({
    ...manifest.tasks[taskId],
    run_id: manifest.runId,
    flakegym_version: manifest.provenance.flakegymVersion,
    cline_version: manifest.provenance.cline.version,
    ...(manifest.provenance.cline.integrity ? { cline_integrity: manifest.provenance.cline.integrity } : {}),
    ...(manifest.provenance.nixStorePath ? { nix_store_path: manifest.provenance.nixStorePath } : {}),
    ...(manifest.provenance.imageDigest ? { image_digest: manifest.provenance.imageDigest } : {}),
    seed: cfg.seed,
    policies: cfg.policies,
  });

  async function writeGroup(taskId: string): Promise<void> {
    const members = [];
    for (let i = 0; i < cfg.groupSize; i++) {
      const r = [...results.values()].find((x) => x.taskId === taskId && x.index === i);
      if (!r) return; // not finished (interrupted)
      const dir = p.trajectory(r.trajectoryId).dir;
      const ex = r.reward === null ? { messages: [] } : await deps.exportTrajectory({ dir, result: r });
      members.push({
        result: r,
        messages: ex.messages,
        ...(ex.sequences ? { sequences: ex.sequences } : {}),
      });
    }
    const line = buildGroup(
      {
        runId: manifest.runId,
        taskId,
        provenance: provenanceOf(taskId),
        withTokens: cfg.tokenizer !== undefined,
      },
      members,
    );
    await appendJsonLine(p.groups, line);
    groupsWritten.add(taskId);
    send(line);
  }

  async function finishTrajectory(
    slot: TrajectorySlot,
    task: RolloutTask,
    attempt: AgentAttempt | undefined,
    outcome: Outcome,
    score: Score | null,
    snapshotMs: number,
    retries: TrajectoryResult["infraRetries"],
  ): Promise<TrajectoryResult> {
    const t = p.trajectory(slot.trajectoryId);
    const result: TrajectoryResult = {
      trajectoryId: slot.trajectoryId,
      taskId: slot.taskId,
      index: slot.index,
      policy: slot.policy,
      outcome,
      reward: score ? score.reward : null,
      score,
      timings: {
        snapshotMs,
        forkMs: attempt?.forkMs ?? 0,
        bootMs: attempt?.bootMs ?? 0,
        agentMs: attempt?.agentMs ?? 0,
        scoreMs: score?.durationMs ?? 0,
      },
      counts: attempt?.counts ?? { turns: 0, tokensIn: 0, tokensOut: 0 },
      bootOk: attempt?.bootOk ?? false,
      ...(attempt?.pooledWorker !== undefined ? { pooledWorker: attempt.pooledWorker } : {}),
      infraRetries: retries,
      ...(attempt?.clineTaskId ? { clineTaskId: attempt.clineTaskId } : {}),
      prompt: task.prompt,
      finishedAt: new Date().toISOString(),
    };
    if (score) await writeJsonAtomic(t.score, score);
    // result.json last: its presence is what makes the trajectory done
    await writeJsonAtomic(t.result, result);
    results.set(slot.trajectoryId, result);
    await appendJsonLine(p.metrics, metricsLine(result));
    if (result.reward !== null) await appendJsonLine(p.samples, await sampleLine(result));
    return result;
  }

  async function runSlot(slot: TrajectorySlot, task: RolloutTask, snap: SnapshotRef, snapshotMs: number) {
    const t = p.trajectory(slot.trajectoryId);
    const ev = (
      phase: "queued" | "forking" | "booting" | "agent" | "collecting" | "scoring",
      detail?: string,
    ) =>
      progress({
        type: "trajectory",
        trajectoryId: slot.trajectoryId,
        taskId: slot.taskId,
        phase,
        ...(detail ? { detail } : {}),
      });
    await mkdir(t.dir, { recursive: true });
    const retries: TrajectoryResult["infraRetries"] = [];
    let attempt: AgentAttempt | undefined;
    let infraDetail = "";
    ev("queued");
    for (let n = 0; ; n++) {
      attempt = undefined;
      let end: AttemptEnd;
      await sem.acquire(signal);
      try {
        attempt = await deps.runAgent({
          task,
          snapshot: snap,
          slot,
          dir: t.dir,
          signal,
          onPhase: (ph, detail) => ev(ph, detail),
          onTurn: (turns) =>
            progress({
              type: "trajectory",
              trajectoryId: slot.trajectoryId,
              taskId: slot.taskId,
              phase: "agent",
              turns,
            }),
        });
        end = { outcome: attempt.outcome };
        infraDetail = attempt.outcome.detail;
      } catch (err) {
        if (isAbort(signal, err)) throw err;
        // bad input (a policy or task this run cannot use) fails the same way every time: a task error
        if (!isRetryable({ error: err })) throw err;
        end = { error: err };
        infraDetail = (err as Error).message;
      } finally {
        sem.release();
      }
      if (!shouldRetry(end, n, cfg.maxInfraRetries)) break;
      retries.push({ attempt: n + 1, detail: infraDetail, at: new Date().toISOString() });
      progress({ type: "retry", trajectoryId: slot.trajectoryId, attempt: n + 1, detail: infraDetail });
      await moveToAttempt(p, slot.trajectoryId, n + 1);
    }
    if (!attempt || attempt.outcome.kind === "infra_error") {
      const outcome: Outcome = {
        kind: "infra_error",
        detail: `${infraDetail} (after ${retries.length + 1} attempt${retries.length ? "s" : ""})`,
      };
      const r = await finishTrajectory(slot, task, attempt, outcome, null, snapshotMs, retries);
      progress({
        type: "trajectory",
        trajectoryId: slot.trajectoryId,
        taskId: slot.taskId,
        phase: "done",
        outcome: "infra_error",
        reward: null,
        detail: infraDetail,
      });
      return r;
    }
    await writeFileAtomic(t.diff, attempt.diff);
    ev("scoring");
    let score: Score | null = null;
    let scoreError = "";
    for (let n = 0; n <= cfg.maxInfraRetries && !score; n++) {
      // finishing a trajectory goes ahead of starting another one's agent
      await sem.acquire(signal, { first: true });
      try {
        score = await deps.score({ task, snapshot: snap, slot, diff: attempt.diff, signal });
      } catch (err) {
        if (isAbort(signal, err)) throw err;
        scoreError = (err as Error).message;
        if (err instanceof ScoringSetupError) break; // the task is broken; retrying will not help
        // a scoring run the machinery lost is an infra failure too: retried, and recorded
        if (n < cfg.maxInfraRetries) {
          const detail = `scoring: ${scoreError}`;
          retries.push({ attempt: retries.length + 1, detail, at: new Date().toISOString() });
          progress({ type: "retry", trajectoryId: slot.trajectoryId, attempt: retries.length, detail });
        }
      } finally {
        sem.release();
      }
    }
    const outcome: Outcome = score
      ? attempt.outcome
      : {
          kind: "infra_error",
          detail: `scoring failed: ${scoreError} (agent outcome: ${attempt.outcome.kind})`,
        };
    const r = await finishTrajectory(slot, task, attempt, outcome, score, snapshotMs, retries);
    progress({
      type: "trajectory",
      trajectoryId: slot.trajectoryId,
      taskId: slot.taskId,
      phase: "done",
      outcome: r.outcome.kind,
      reward: r.reward,
      turns: r.counts.turns,
      // why it did not complete (the limit named), on the trajectory's line
      ...(r.outcome.kind === "completed"
        ? {}
        : { detail: "limit" in r.outcome ? `${r.outcome.limit}: ${r.outcome.detail}` : r.outcome.detail }),
    });
    return r;
  }

  async function runTask(taskId: string, slots: readonly TrajectorySlot[]) {
    progress({ type: "task", taskId, phase: "snapshot" });
    const task = await deps.loadTask(taskId, signal);
    const t0 = Date.now();
    const snap = await snapLimiter.with(signal, () =>
      deps.snapshot(
        task,
        signal,
        (detail) => progress({ type: "task", taskId, phase: "snapshot", detail }),
        slots.length,
      ),
    );
    const snapshotMs = Date.now() - t0;
    manifest.tasks[taskId] = {
      ...manifest.tasks[taskId],
      rowId: task.rowId,
      ...(task.datasetRow !== undefined ? { datasetRow: task.datasetRow } : {}),
      snapshotKey: snap.key,
      profile: task.profile,
      ...(task.image ? { image: task.image } : {}),
    };
    await saveManifest();
    if (emitter) await emitter.waitForCapacity(signal);
    progress({
      type: "task",
      taskId,
      phase: "running",
      detail: `snapshot ${snap.key.slice(0, 12)}${snap.cached ? " (cached)" : ""}`,
    });
    // every slot settles before the task ends (a failed one must not leave others writing later)
    const ran = await Promise.allSettled(slots.map((s) => runSlot(s, task, snap, snapshotMs)));
    const failed = ran.find((x) => x.status === "rejected");
    if (failed) throw failed.reason;
    progress({ type: "task", taskId, phase: "group" });
    await writeGroup(taskId);
    progress({ type: "task", taskId, phase: "done" });
  }

  let interrupted = false;
  const taskErrors = new Map<string, { code: string; message: string }>();
  try {
    // groups whose trajectories all finished before a kill, then pending Atropos sends
    for (const taskId of plan.groupsMissing) await writeGroup(taskId);
    if (emitter) for (const line of await readGroups(p)) send(line);
    const byTask = new Map<string, TrajectorySlot[]>();
    for (const s of plan.toRun) byTask.set(s.taskId, [...(byTask.get(s.taskId) ?? []), s]);
    const tasksRun = [...byTask];
    const settled = await Promise.allSettled(tasksRun.map(([taskId, slots]) => runTask(taskId, slots)));
    settled.forEach((r, i) => {
      if (r.status === "fulfilled") return;
      if (isAbort(signal, r.reason)) {
        interrupted = true;
        return;
      }
      const err = r.reason as { code?: unknown; message?: unknown };
      const taskId = tasksRun[i]![0];
      taskErrors.set(taskId, {
        code: typeof err?.code === "string" ? err.code : "E_TASK",
        message: typeof err?.message === "string" ? err.message : String(r.reason),
      });
      progress({ type: "task", taskId, phase: "done", detail: `failed: ${taskErrors.get(taskId)!.message}` });
    });
    await sendChain;
  } finally {
    await emitter?.disconnect(AbortSignal.timeout(5_000));
    await manifestChain.catch(() => {});
  }

  // summary: from what is on disk now
  const tasks = cfg.tasks.map((taskId) => {
    const rs = [...results.values()].filter((r) => r.taskId === taskId);
    const gid = groupId(manifest.runId, taskId);
    const at = !cfg.atropos ? "off" : (atroposStatus.get(gid) ?? "pending");
    return summarizeTask(
      taskId,
      cfg.groupSize,
      rs,
      groupsWritten.has(taskId) ? "written" : "missing",
      at,
      taskErrors.get(taskId),
    );
  });
  const all = [...results.values()];
  const scored = all.map((r) => r.reward).filter((x): x is number => x !== null);
  const { outcomes, limits } = countOutcomes(all);
  const summary: RunSummary = {
    runId: manifest.runId,
    out: p.dir,
    complete: all.length === plan.all.length && tasks.every((t) => t.group === "written"),
    interrupted: interrupted || signal.aborted,
    durationMs: runDurationMs(prior, Date.now() - started, didWork),
    trajectories: {
      expected: plan.all.length,
      finished: all.length,
      infraRetries: all.reduce((n, r) => n + r.infraRetries.length, 0),
      outcomes,
      limits,
    },
    meanReward: scored.length ? scored.reduce((a, b) => a + b, 0) / scored.length : null,
    tasks,
    ...(o.dataset ? { dataset: o.dataset } : {}),
    ...(cfg.atropos
      ? {
          atropos: {
            sent: tasks.filter((t) => t.atropos === "sent").length,
            dropped: tasks.filter((t) => t.atropos === "dropped").length,
            pending: tasks.filter((t) => t.atropos === "pending" && t.group === "written").length,
          },
        }
      : {}),
  };
  await writeJsonAtomic(p.summary, summary);
  return { summary, lines: renderSummary(summary) };
}
