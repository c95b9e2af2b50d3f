import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createDeadline } from "@flakegym/nomad-jobs";
import type { ContractLimits, StageName } from "../contract/contract.js";
import { FlakegymError } from "../errors.js";
import { acquireRunLock } from "../rollout/run-lock.js";
import { type BackendChoice, resolveBackend } from "../workers/backend.js";
import type { ApiEventSink } from "./events.js";
import { defaultSessionsDir, type EnvSession, loadSession, saveSession } from "./session.js";
import { runStage, type StageRun, type StageRunInput } from "./stage.js";

/** What every API call takes. */
export interface CallOptions {
  readonly signal?: AbortSignal;
  /** Where sessions live (default `$FLAKEGYM_SESSIONS_DIR`, else `runs/sessions`). */
  readonly sessionsDir?: string;
  readonly onEvent?: ApiEventSink;
  /**
   * Where stages run: a backend the caller made (kept open), or a backend config as the CLI's
   * `--backend` makes (`{ kind: "podman", images: "host" }`; made and closed by the call). Default:
   * the local bubblewrap backend. See workers/backend.ts `resolveBackend`.
   */
  readonly backend?: BackendChoice;
}

export function callContext(opts: CallOptions): { sessionsDir: string; signal: AbortSignal } {
  return {
    sessionsDir: opts.sessionsDir ?? defaultSessionsDir(),
    signal: opts.signal ?? new AbortController().signal,
  };
}

export type StageStep = Pick<StageRunInput, "stage"> &
  Partial<Pick<StageRunInput, "command" | "label" | "env" | "gatewaySocket" | "gateway">>;

export function ensureReady(session: EnvSession): void {
  if (session.state !== "ready") {
    throw new FlakegymError("E_SESSION_TORN_DOWN", `session ${session.id} was torn down`, {
      hint: "run setup again for a new session",
    });
  }
}

/**
 * One numbered call of a session (`calls/<n>-<name>/`): a `max_total_seconds` deadline over all
 * its stages, progress events, and the session saved with its call count. The call holds the
 * session directory's lock (the one run-directory lock, rollout/run-lock.ts) from before it reads
 * the call count until its last write: a second call at once is refused naming the holder, never
 * a second writer of the same `calls/<n>-…/`. `finish` makes the session saved at the end.
 */
export async function withCall<T>(
  stale: EnvSession,
  name: string,
  opts: CallOptions,
  limits: ContractLimits,
  body: (run: (step: StageStep) => Promise<StageRun>, callDir: string) => Promise<T>,
  finish: (session: EnvSession, value: T) => EnvSession = (x) => x,
): Promise<{ session: EnvSession; value: T }> {
  ensureReady(stale);
  const lock = await acquireRunLock(stale.dir, "env");
  try {
    // the stored session is the latest (another call may have finished since it was loaded)
    const done = await callLocked(await loadSession(stale.dir), name, opts, limits, body);
    const session = finish(done.session, done.value);
    await saveSession(session);
    return { session, value: done.value };
  } finally {
    await lock.release();
  }
}

async function callLocked<T>(
  session: EnvSession,
  name: string,
  opts: CallOptions,
  limits: ContractLimits,
  body: (run: (step: StageStep) => Promise<StageRun>, callDir: string) => Promise<T>,
): Promise<{ session: EnvSession; value: T }> {
  ensureReady(session);
  const n = session.calls + 1;
  const next: EnvSession = { ...session, calls: n };
  await saveSession(next);
  const callDir = join(session.dir, "calls", `${n}-${name}`);
  const deadline = createDeadline({
    signals: [opts.signal],
    timeout: { ms: limits.max_total_seconds * 1000, limit: "max_total_seconds" },
  });
  const { backend, owned } = resolveBackend(opts.backend, { env: process.env });
  try {
    const prompts = await readFile(join(session.dir, "prompts.jsonl"), "utf8");
    const run = async (step: StageStep): Promise<StageRun> => {
      const label = step.label ?? step.stage;
      opts.onEvent?.({ kind: "stage-start", stage: step.stage, label });
      const r = await runStage({
        session: next,
        backend,
        callDir,
        inputs: { "hints.json": JSON.stringify(session.hints), "prompts.jsonl": prompts },
        env: step.env ?? {},
        maxCmdSeconds: limits.max_cmd_seconds,
        signal: deadline.signal,
        totalExpired: () => deadline.expired,
        ...step,
      });
      opts.onEvent?.({
        kind: "stage-end",
        stage: step.stage,
        label,
        outcome: r.outcome,
        durationMs: r.durationMs,
      });
      return r;
    };
    const value = await body(run, callDir);
    return { session: next, value };
  } finally {
    deadline.dispose();
    if (owned) await backend.close?.();
  }
}

export type { StageName };
