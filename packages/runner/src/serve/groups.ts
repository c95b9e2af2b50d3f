import { mkdir, readdir, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  readGroupRecords,
  readResultsReport,
  readServedTrajectory,
  type ServedTrajectory,
} from "../export/served-record.js";
import type { ChatTokenizer } from "../export/tokenizer.js";
import { newRunId, resolveRolloutOptions } from "../rollout/config.js";
import type { RolloutDeps } from "../rollout/deps.js";
import type { RolloutOptions } from "../rollout/options.js";
import { acquireRunLock, type RunLock } from "../rollout/run-lock.js";
import { runRollout } from "../rollout/run-rollout.js";
import { parseJsonFile } from "../run-format/json-file.js";
import { writeJsonAtomic } from "../run-format/jsonl.js";
import { readManifest, runPaths } from "../run-format/run-dir.js";
import { type RunConfig, TrajectoryResult } from "../run-format/schema.js";
import { groupEndOf } from "./group-end.js";
import { type GroupTasks, prepareGroupTasks } from "./group-tasks.js";
import {
  DoneLine,
  type GroupRequest,
  type GroupStatus,
  type StreamLine,
  TrajectoryErrorLine,
} from "./schema.js";

/**
 * The groups a server runs or ran, kept under a state directory: `requests/<request_id>/` holds
 * `request.json` (the request as accepted), `catalog/` (its rows or scenario as catalog tasks),
 * `run/` (the rollout run directory), `records/<id>.json`
 * (each streamed trajectory, written atomically before it is streamed) and `done.json` (the final
 * line, written when the group completed or was cancelled). A group the server was stopped in the
 * middle of has no done.json: resubmitting it resumes the run, and finished trajectories never run
 * again (runRollout's resume).
 */

export interface GroupRun {
  readonly request: GroupRequest;
  readonly runId: string;
  status: GroupStatus;
  detail?: string;
  readonly records: ServedTrajectory[];
  /** Finished trajectories whose record could not be built (streamed as trajectory_error lines). */
  readonly errors: TrajectoryErrorLine[];
  /** Trajectories the group runs (tasks × group size). */
  readonly expected: number;
  readonly listeners: Set<(line: StreamLine) => void>;
  /** Aborted by DELETE (reason "cancelled") or by the server closing (it resumes later). */
  readonly abort: AbortController;
  readonly finished: Promise<void>;
}

export interface GroupRunnerOptions {
  readonly stateDir: string;
  /** The policy model's tokenizer: each finished trajectory's record (its one token export). */
  readonly tokenizer: ChatTokenizer;
  /** Workers one group runs at once. */
  readonly concurrency: number;
  readonly catalog?: string;
  /** Where rows may name local repositories (relative to it); without it only remote ones are taken. */
  readonly reposDir?: string;
  readonly backend?: "local" | "podman" | "nomad";
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  readonly depsFor: (config: RunConfig, runId: string, signal: AbortSignal) => Promise<RolloutDeps>;
  readonly onNote?: (message: string) => void;
}

export const CANCELLED = "cancelled by DELETE";

/** The done line of a group as it stands. Pure. */
export function doneLineOf(
  g: Pick<GroupRun, "request" | "status" | "detail" | "records" | "errors" | "expected">,
): DoneLine {
  return {
    type: "done",
    request_id: g.request.request_id,
    status: g.status,
    trajectories: g.records.length,
    expected: g.expected,
    ...(g.errors.length > 0
      ? { excluded: g.errors.map((e) => ({ trajectory_id: e.trajectory_id, reason: e.reason })) }
      : {}),
    ...(g.detail ? { detail: g.detail } : {}),
  };
}

/** The rollout flags a group request stands for. Pure. */
export function rolloutOptionsOf(
  req: GroupRequest,
  o: Pick<GroupRunnerOptions, "concurrency" | "backend">,
  out: string,
  tasks: GroupTasks,
): RolloutOptions {
  const s = req.sampling ?? {};
  return {
    task: [...tasks.tasks],
    groupSize: req.group_size,
    policy: [req.inference ? `openai:${req.inference.base_url}#${req.inference.model}` : req.policy!],
    concurrency: o.concurrency,
    ...(tasks.catalog ? { catalog: tasks.catalog } : {}),
    ...(o.backend ? { backend: o.backend } : {}),
    ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
    ...(s.top_p !== undefined ? { topP: s.top_p } : {}),
    ...(s.top_k !== undefined ? { topK: s.top_k } : {}),
    ...(s.max_tokens !== undefined ? { maxTokens: s.max_tokens } : {}),
    ...(s.seed !== undefined ? { seed: s.seed } : {}),
    ...(req.max_turns !== undefined ? { maxTurns: req.max_turns } : {}),
    ...(req.timeout_s !== undefined ? { timeout: req.timeout_s } : {}),
    // no --tokenizer: the group's records (records/) are its one token export; the run's
    // groups.jsonl keeps messages and scores only, not a second copy of every token id
    out,
    keepEqualScores: false,
    json: false,
    // serve's rollouts take interpreters from FLAKEGYM_PYTHON and FLAKEGYM_ALLOW_PYTHON_MISMATCH
    allowPythonMismatch: false,
  };
}

/** The same request, key order aside? (A resubmission must be the request it repeats.) Pure. */
export function sameRequest(a: GroupRequest, b: GroupRequest): boolean {
  const canon = (x: unknown): unknown =>
    Array.isArray(x)
      ? x.map(canon)
      : x && typeof x === "object"
        ? Object.fromEntries(
            Object.entries(x)
              .filter(([, v]) => v !== undefined)
              .sort(([k1], [k2]) => k1.localeCompare(k2))
              .map(([k, v]) => [k, canon(v)]),
          )
        : x;
  return JSON.stringify(canon(a)) === JSON.stringify(canon(b));
}

export function groupPaths(stateDir: string, id: string) {
  const dir = join(stateDir, "requests", id);
  return {
    dir,
    request: join(dir, "request.json"),
    catalog: join(dir, "catalog"),
    run: join(dir, "run"),
    records: join(dir, "records"),
    record: (trajectoryId: string) => join(dir, "records", `${trajectoryId}.json`),
    errors: join(dir, "errors"),
    /** A trajectory whose record could not be built, and why (retried when the group resumes). */
    error: (trajectoryId: string) => join(dir, "errors", `${trajectoryId}.json`),
    done: join(dir, "done.json"),
  };
}

/** What is on disk for a request id (undefined when nothing is). */
export async function readStored(stateDir: string, id: string) {
  const p = groupPaths(stateDir, id);
  const text = await readFile(p.request, "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  const next = `restore it or remove ${p.dir} (the request then runs anew when resubmitted)`;
  const request = parseJsonFile(text, p.request, next) as GroupRequest;
  const records = await readGroupRecords(p.records);
  const errors: TrajectoryErrorLine[] = [];
  for (const f of (await readdir(p.errors).catch(() => [] as string[])).sort()) {
    if (f.endsWith(".json"))
      errors.push(
        TrajectoryErrorLine.parse(
          parseJsonFile(await readFile(join(p.errors, f), "utf8"), join(p.errors, f), next),
        ),
      );
  }
  const doneText = await readFile(p.done, "utf8").catch(() => undefined);
  const done = doneText === undefined ? undefined : DoneLine.parse(parseJsonFile(doneText, p.done, next));
  const runId = await readManifest(runPaths(p.run)).then(
    (m) => m.runId,
    () => undefined,
  );
  return { request, records, errors, done, runId };
}

/**
 * Starts (or resumes) a group in the background. The returned run streams each trajectory as it
 * finishes; `finished` settles when the group ends (never rejects).
 */
export async function startGroup(
  o: GroupRunnerOptions,
  request: GroupRequest,
  stored: StoredGroup,
): Promise<GroupRun> {
  const p = groupPaths(o.stateDir, request.request_id);
  // one runner per group, across servers sharing the state dir: held until the group ends
  const lock = await acquireRunLock(p.dir, "serve");
  try {
    return await startLockedGroup(o, request, stored, lock);
  } catch (err) {
    await lock.release();
    // a request that never started leaves nothing behind (a stored one keeps what it has)
    if (!stored) await rm(p.dir, { recursive: true, force: true });
    throw err;
  }
}

type StoredGroup = Awaited<ReturnType<typeof readStored>>;

/** How a group starts from what is stored: resumed under its run id, or new under a fresh one. Pure. */
export function groupStartOf(
  stored: Pick<NonNullable<StoredGroup>, "runId" | "done"> | undefined,
  newId: () => string,
): { resume: boolean; runId: string; writeRequest: boolean; clearVerdict: boolean } {
  return {
    resume: stored?.runId !== undefined,
    runId: stored?.runId ?? newId(),
    writeRequest: !stored,
    // a failed group runs again: its old verdict goes (written anew when it ends)
    clearVerdict: stored?.done?.status === "failed",
  };
}

/** The trajectory_error line of a finished trajectory whose record could not be built. Pure. */
export function trajectoryErrorLineOf(
  runId: string,
  result: Pick<TrajectoryResult, "trajectoryId" | "taskId" | "index">,
  err: unknown,
): TrajectoryErrorLine {
  return {
    type: "trajectory_error",
    run_id: runId,
    trajectory_id: result.trajectoryId,
    task_id: result.taskId,
    index: result.index,
    reason: err instanceof Error ? err.message : String(err),
  };
}

/** Whether the group was cancelled by DELETE (not by the server closing). Pure. */
export function cancelledByDelete(signal: AbortSignal): boolean {
  return signal.aborted && signal.reason === CANCELLED;
}

/** One started group's working state: the run it shows and the chain that orders its writes. */
interface GroupState {
  readonly o: GroupRunnerOptions;
  readonly p: ReturnType<typeof groupPaths>;
  readonly run: GroupRun;
  /** Trajectories whose record is published (never published twice). */
  readonly seen: Set<string>;
  chain: Promise<void>;
}

async function startLockedGroup(
  o: GroupRunnerOptions,
  request: GroupRequest,
  stored: StoredGroup,
  lock: RunLock,
): Promise<GroupRun> {
  const p = groupPaths(o.stateDir, request.request_id);
  const start = groupStartOf(stored, () => newRunId());
  await mkdir(p.records, { recursive: true });
  if (start.writeRequest) await writeJsonAtomic(p.request, request);
  if (start.clearVerdict) await rm(p.done, { force: true });
  const tasks = await prepareGroupTasks(request, p.catalog, o);
  const resolved = resolveRolloutOptions(
    rolloutOptionsOf(request, o, p.run, tasks),
    o.env,
    o.cwd,
    start.runId,
  );
  const records = [...(stored?.records ?? [])];
  const st: GroupState = {
    o,
    p,
    seen: new Set(records.map((r) => r.trajectory_id)),
    chain: Promise.resolve(),
    run: {
      request,
      runId: start.runId,
      status: "running",
      records,
      errors: [],
      expected: tasks.tasks.length * request.group_size,
      listeners: new Set(),
      abort: new AbortController(),
      finished: Promise.resolve(),
    },
  };
  (st.run as { finished: Promise<void> }).finished = driveGroup(st, resolved.config, start.resume, lock);
  if (start.resume)
    o.onNote?.(`serve: ${request.request_id}: resuming run ${start.runId} (${records.length} finished)`);
  return st.run;
}

function emitLine(run: GroupRun, line: StreamLine): void {
  for (const l of run.listeners) l(line);
}

/** Queues a finished trajectory's record behind the group's earlier writes (a failure is a note, never a rejection). */
function publish(st: GroupState, trajectoryId: string): Promise<void> {
  st.chain = st.chain
    .then(() => publishOnce(st, trajectoryId))
    .catch((err: unknown) => st.o.onNote?.(`serve: ${st.run.request.request_id}: ${(err as Error).message}`));
  return st.chain;
}

/**
 * Builds, persists, then streams a finished trajectory's record (once). A record that cannot be
 * built is streamed as a trajectory_error line and kept under errors/; the group goes on.
 */
async function publishOnce(st: GroupState, trajectoryId: string): Promise<void> {
  if (st.seen.has(trajectoryId)) return;
  const { p, run } = st;
  const rp = runPaths(p.run);
  const file = rp.trajectory(trajectoryId).result;
  const result = TrajectoryResult.parse(
    parseJsonFile(
      await readFile(file, "utf8"),
      file,
      "restore it, or delete its trajectory dir and resubmit the group",
    ),
  );
  let rec: ServedTrajectory;
  try {
    rec = await readServedTrajectory(p.run, await readManifest(rp), result, st.o.tokenizer);
  } catch (err) {
    await recordError(st, trajectoryErrorLineOf(run.runId, result, err));
    return;
  }
  await writeJsonAtomic(p.record(trajectoryId), rec);
  await rm(p.error(trajectoryId), { force: true });
  st.seen.add(trajectoryId);
  run.records.push(rec);
  emitLine(run, rec);
}

/** Keeps a trajectory's error under errors/ (replacing an older one of it) and streams it. */
async function recordError(st: GroupState, line: TrajectoryErrorLine): Promise<void> {
  await mkdir(st.p.errors, { recursive: true });
  await writeJsonAtomic(st.p.error(line.trajectory_id), line);
  const errors = st.run.errors;
  const i = errors.findIndex((e) => e.trajectory_id === line.trajectory_id);
  if (i >= 0) errors.splice(i, 1);
  errors.push(line);
  emitLine(st.run, line);
}

/**
 * Every end is on disk before anyone sees it, so the server keeps no finished group in memory;
 * complete and cancelled are final, a failed group runs again when resubmitted. A group the server
 * stopped (closing) leaves no done.json: its stream's last line says why, and it resumes later.
 */
async function finishGroup(st: GroupState, end: { status: GroupStatus; detail?: string }): Promise<void> {
  const { run } = st;
  const { status, detail } = end;
  const done: DoneLine = doneLineOf({ ...run, status, ...(detail ? { detail } : {}) });
  // stopped by the server closing: no done.json, so the next server resumes it (a GET or a resubmission)
  const stoppedByServer = run.abort.signal.aborted && !cancelledByDelete(run.abort.signal);
  try {
    if (!stoppedByServer) await writeJsonAtomic(st.p.done, done);
  } finally {
    run.status = status;
    if (detail) run.detail = detail;
    emitLine(run, done);
  }
}

/** Runs the group's rollout to its end and writes that end; settles when it has (never rejects). */
async function driveGroup(st: GroupState, config: RunConfig, resume: boolean, lock: RunLock): Promise<void> {
  const { run } = st;
  const signal = run.abort.signal;
  let deps: RolloutDeps | undefined;
  try {
    deps = await st.o.depsFor(config, run.runId, signal);
    const summary = await runGroupRollout(st, config, resume, deps);
    const taskError = summary.tasks.find((t) => t.error)?.error;
    await finishGroup(
      st,
      groupEndOf({
        cancelled: cancelledByDelete(signal),
        ...(signal.aborted ? { aborted: String(signal.reason) } : {}),
        ...(taskError ? { taskError } : {}),
        rolloutComplete: summary.complete,
        expected: run.expected,
        records: run.records.length,
        failures: run.errors,
      }),
    );
  } catch (err) {
    await st.chain;
    await finishGroup(
      st,
      groupEndOf({
        cancelled: cancelledByDelete(signal),
        thrown: (err as Error).message,
        rolloutComplete: false,
        expected: run.expected,
        records: run.records.length,
        failures: run.errors,
      }),
    ).catch(() => {});
  } finally {
    await deps?.close().catch(() => {});
    await lock.release();
  }
}

/** The group's rollout, each finished trajectory published as it ends (and, after, any it missed). */
async function runGroupRollout(st: GroupState, config: RunConfig, resume: boolean, deps: RolloutDeps) {
  const { p, run } = st;
  const { summary } = await runRollout({
    out: p.run,
    resume,
    config,
    runId: run.runId,
    deps,
    signal: run.abort.signal,
    progress: (ev) => {
      if (ev.type === "trajectory" && ev.phase === "done") void publish(st, ev.trajectoryId);
    },
  });
  // a trajectory that finished before a restart (or whose event was missed) is streamed too
  const { results, unreadable } = await readResultsReport(p.run);
  for (const u of unreadable) st.o.onNote?.(`serve: ${st.run.request.request_id}: ${u.reason}`);
  for (const r of results) void publish(st, r.trajectoryId);
  await st.chain;
  return summary;
}
