import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import { type BoundedDirs, filesystemFull } from "../bounded-dirs.js";
import { execTimeoutMs, stoppedExecResult } from "../exec-budget.js";
import { execLimitOf } from "../limit-verdict.js";
import type { ExecOptions, ExecResult, WorkerExit, WorkerLimit, WorkerSpec } from "../types.js";
import { mayRunApart, SCORER_HOST_UID } from "./bwrap-args.js";
import { execArgvOf } from "./decisions.js";
import { runSandboxed, type SandboxShape } from "./sandbox.js";
import { SANDBOX_PATHS } from "./shape.js";
import { uidMapped } from "./uid-map.js";
import type { LocalWorkerState } from "./worker-state.js";

/**
 * A new dir in the worker's state tmpfs bound at /tmp for one exec (bwrap's own /tmp tmpfs is used
 * when the state is not a tmpfs), so nothing one exec leaves in /tmp is seen by the next.
 */
async function freshExecTmp(
  dirs: BoundedDirs,
  shape: SandboxShape,
): Promise<{ shape: SandboxShape; remove(): Promise<void> } | undefined> {
  if (!dirs.bounded || !shape.bwrap) return undefined;
  const tmp = await mkdtemp(join(dirs.root, "exec-tmp-"));
  return {
    shape: { ...shape, bwrap: { ...shape.bwrap, tmp } },
    remove: () => rm(tmp, { recursive: true, force: true }),
  };
}

/**
 * The shape with the command as the sandbox's PID 1 (`ExecOptions.asInit`, a scoring exec) and,
 * given `runner` (a runner that is root: only it can map two users), its scorer and the code it
 * runs as two users (`BwrapSpec.apart`). Pure.
 */
export function asInitShape(
  shape: SandboxShape,
  asInit: boolean,
  runner?: { readonly uid: number; readonly gid: number },
): SandboxShape {
  if (!asInit || !shape.bwrap) return shape;
  const apart =
    runner && mayRunApart(shape.bwrap) ? { apart: { runnerUid: runner.uid, runnerGid: runner.gid } } : {};
  return { ...shape, bwrap: { ...shape.bwrap, asPid1: true, ...apart } };
}

/**
 * Who may map the scoring sandbox's two users: root (in a namespace where the scorer's host user
 * exists), unless `FLAKEGYM_SCORING_USERS=one` asks for the one-user scoring (sealed shells only:
 * scoring/script-seal.ts). Pure over its inputs.
 */
export function apartRunner(
  uid: number | undefined,
  gid: number | undefined,
  uidMap: string,
  env: Readonly<Record<string, string | undefined>>,
): { uid: number; gid: number } | undefined {
  if (env.FLAKEGYM_SCORING_USERS === "one" || uid !== 0 || gid === undefined) return undefined;
  return uidMapped(uidMap, SCORER_HOST_UID) ? { uid, gid } : undefined;
}

let uidMap: string | undefined;
/**
 * The runner that may map two users, read now (the environment may change between runs: the
 * bench); `env` decides whether it is asked to (FLAKEGYM_SCORING_USERS for the scorer).
 */
export function twoUserRunner(
  env: Readonly<Record<string, string | undefined>> = process.env,
): { uid: number; gid: number } | undefined {
  if (uidMap === undefined) {
    try {
      uidMap = readFileSync("/proc/self/uid_map", "utf8");
    } catch {
      uidMap = "0 0 4294967295"; // no /proc: the initial namespace
    }
  }
  return apartRunner(process.getuid?.(), process.getgid?.(), uidMap, env);
}

const scoringRunner = () => twoUserRunner(process.env);

/** Whether a failed command may have failed for a full disk: the workspace's quota, or the worker's bounded state. */
async function diskFullAfter(ws: LocalWorkerState, s: WorkerSpec): Promise<boolean> {
  return (
    (ws.quotaByFs && (await filesystemFull(s.workspace))) ||
    (ws.dirs.bounded && (await filesystemFull(ws.dirs.root)))
  );
}

/** Runs `command` in the worker's sandbox for trajectory `s`, and says which limit (if any) ended it. */
export async function execInWorker(
  ws: LocalWorkerState,
  s: WorkerSpec,
  command: string,
  o: ExecOptions = {},
): Promise<ExecResult> {
  if (ws.exit) return stoppedExecResult(ws.id, ws.exit.reason);
  const before = await ws.prepared.cgroup.events();
  const timeoutMs = execTimeoutMs(s, ws.startedAt, o.timeoutMs);
  const argv = execArgvOf(command, o.cwd ?? (ws.unsafe ? s.workspace : SANDBOX_PATHS.workspace), o.env);
  using linked = createDeadline({ signals: [ws.life.signal, o.signal] });
  // each exec gets a fresh private /tmp, inside the worker's bounded state
  const execTmp = await freshExecTmp(
    ws.dirs,
    asInitShape(ws.prepared.shape, o.asInit === true, scoringRunner()),
  );
  let r: ExecResult;
  let diskFull: boolean;
  try {
    r = await runSandboxed(
      execTmp?.shape ?? asInitShape(ws.prepared.shape, o.asInit === true, scoringRunner()),
      argv,
      { timeoutMs, signal: linked.signal, hostCwd: s.workspace },
      ws.prepared.env,
    );
    diskFull = r.exitCode !== 0 && (await diskFullAfter(ws, s)); // before the exec's /tmp goes
  } finally {
    await execTmp?.remove();
  }
  // Ended by the worker's wall clock (its timer and this exec's race): that is a timeout.
  const ended = (ws.exit as WorkerExit | undefined)?.reason;
  const timedOut = r.timedOut || ended === "wall_clock";
  const after = await ws.prepared.cgroup.events();
  const limit = execLimitOf({
    exitCode: r.exitCode,
    timedOut,
    ...(ended ? { workerExit: ended } : {}),
    oomKills: after.oomKills - before.oomKills,
    pidsRejected: after.pidsRejected - before.pidsRejected,
    diskFull,
  });
  const { sandboxKilled, ...rest } = r;
  return {
    ...rest,
    timedOut,
    ...(limit ? { limit } : {}),
    ...(killedFromOutside(sandboxKilled === true, limit) ? { sandboxKilled: true } : {}),
  };
}

/**
 * Whether a sandbox process that died of a signal nobody here sent was killed from outside: not
 * when one of the worker's limits explains it — the cgroup's OOM killer picks the largest process
 * of the worker, bwrap included (code that keeps its memory in a tmpfs file keeps its own
 * processes small), and the watchdog ends the whole cgroup at the CPU budget. Those are what the
 * code in the sandbox did (a scoring exec's: a 0 after the agent's code ran, never "no score"). Pure.
 */
export function killedFromOutside(signalled: boolean, limit: WorkerLimit | undefined): boolean {
  return signalled && limit === undefined;
}

/** CPU seconds every process of the worker has used (undefined without a cgroup). */
export async function cpuSecondsOf(ws: LocalWorkerState): Promise<number | undefined> {
  const usage = await ws.prepared.cgroup.usage();
  return usage === undefined ? undefined : usage.cpuUsec / 1e6;
}
