import { setTimeout as sleep } from "node:timers/promises";
import { createDeadline } from "@flakegym/nomad-jobs";
import { z } from "zod";
import type { RegisterEnvRequest, ScoredDataGroup } from "../../run-format/atropos-schema.js";
import { appendJsonLine, readJsonl } from "../../run-format/jsonl.js";
import { type AtroposClient, AtroposError } from "./client.js";
import { apiRestarted, batchSizeProblem, checkGroup, type DropReason, shouldPause } from "./rules.js";

/**
 * One line of `atropos-sent.jsonl`: a group the run-api received, one the rules dropped, or one
 * about to be sent (`sending`, written just before the POST: a group whose marks end there is in
 * doubt — the answer was lost or the run was killed mid-send).
 */
export const AtroposMark = z
  .object({
    group_id: z.string().describe("the group's id (group_overrides.group_id)"),
    status: z
      .enum(["sent", "dropped", "sending"])
      .describe("sent to the run-api, dropped by an Atropos rule, or being sent"),
    reason: z.string().optional().describe("the rule that dropped it"),
    detail: z.string().optional().describe("what the rule saw"),
    env_id: z.number().int().optional().describe("the env id it was sent under"),
    api: z.string().optional().describe("the run-api URL it was sent to"),
    confirmed_by: z
      .enum(["reply", "queue"])
      .optional()
      .describe("how the send is known: the run-api's answer, or (answer lost) its queue grew"),
    queued_before: z
      .number()
      .int()
      .optional()
      .describe("sending: the env's self_queue_size just before the POST"),
    step: z.number().int().optional().describe("sending: the run-api's current_step just before the POST"),
    at: z.string().describe("ISO time"),
  })
  .strict();
export type AtroposMark = z.infer<typeof AtroposMark>;

export type PushResult =
  | { readonly status: "sent"; readonly attempts: number }
  | { readonly status: "dropped"; readonly reason: DropReason; readonly detail: string }
  | { readonly status: "pending"; readonly detail: string };

export interface AtroposEmitterOptions {
  readonly client: AtroposClient;
  readonly register: RegisterEnvRequest;
  /** Drop groups whose scores are all equal (Atropos default). */
  readonly dropEqualScores: boolean;
  /** Queue limit in batches before sending pauses (Atropos `max_batches_offpolicy`, default 3). */
  readonly maxBatchesOffpolicy: number;
  /** `atropos-sent.jsonl` in the run directory. */
  readonly markFile: string;
  /** How often to poll register-env / status-env while waiting (Atropos uses 1 s). */
  readonly pollMs: number;
  /** The longest one wait (trainer start, a full queue) may last before giving up for now. */
  readonly waitMs: number;
  /** Attempts per send on 5xx / network errors. */
  readonly attempts: number;
  /** Base back-off between attempts (doubles each time). */
  readonly backoffMs: number;
  /** Called on state changes worth showing (waiting for the trainer, queue full, …). */
  readonly onEvent?: (message: string) => void;
}

interface Registration {
  readonly envId: number;
  readonly batchSize: number;
  readonly maxTokenLen: number;
}

/** An emitter's state: its registration with the run-api and what it last saw there. */
interface EmitterState {
  readonly o: AtroposEmitterOptions;
  reg: Registration | undefined;
  /** The registration under way (concurrent callers share it). */
  connecting: Promise<Registration | undefined> | undefined;
  lastError: string | undefined;
  /** The run-api's step and our queued groups at the last status-env (undefined: not seen yet). */
  lastStep: number | undefined;
  lastSelfQueue: number | undefined;
  /** The groups in doubt in the mark file (read once). */
  doubts: Promise<Map<string, AtroposMark>> | undefined;
}

/** The run-api no longer knows our env id: the next connect registers again. */
function forget(s: EmitterState, why: string): void {
  if (!s.reg) return;
  s.o.onEvent?.(`atropos: ${why}; env ${s.reg.envId} is gone, registering again`);
  s.reg = undefined;
  s.lastStep = undefined;
  s.lastSelfQueue = undefined;
}

/** `--atropos-wait` bounds one wait (trainer start, a full queue); GC-safe (createDeadline). */
const atroposWait = (s: EmitterState, signal: AbortSignal) =>
  createDeadline({ signals: [signal], timeout: { ms: s.o.waitMs, limit: "--atropos-wait" } });

/** Why registering gave up, after waiting `waitMs` (the last error seen, if any). Pure. */
export function registerGaveUp(waitMs: number, lastError: string | undefined): string {
  return `the run-api did not register this env within --atropos-wait (${waitMs} ms)${lastError ? ` (last error: ${lastError})` : " (the trainer has not started)"}`;
}

/** One register-env (then info on success): the registration, or the status the run-api answered instead. */
async function registerOnce(s: EmitterState, limit: AbortSignal): Promise<Registration | string> {
  const r = await s.o.client.registerEnv(s.o.register, limit);
  if (r.status === "success" && "env_id" in r && typeof r.env_id === "number") {
    const info = await s.o.client.info(limit);
    return { envId: r.env_id, batchSize: info.batch_size, maxTokenLen: info.max_token_len };
  }
  return r.status;
}

async function register(s: EmitterState, signal: AbortSignal): Promise<Registration | undefined> {
  const { o } = s;
  using wait = atroposWait(s, signal);
  const limit = wait.signal;
  let announced = false;
  for (;;) {
    try {
      const r = await registerOnce(s, limit);
      if (typeof r !== "string") {
        s.reg = r;
        o.onEvent?.(
          `atropos: registered as env ${r.envId} (batch_size ${r.batchSize}, max_token_len ${r.maxTokenLen})`,
        );
        return r;
      }
      if (!announced) o.onEvent?.(`atropos: run-api says "${r}"; waiting (up to ${o.waitMs} ms)`);
      announced = true;
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (limit.aborted) break;
      if (err instanceof AtroposError && !err.retryable) throw err;
      s.lastError = (err as Error).message;
    }
    if (!(await pollPause(s, signal, limit))) break;
  }
  s.lastError = registerGaveUp(o.waitMs, s.lastError);
  o.onEvent?.(`atropos: ${s.lastError}; groups stay on disk`);
  return undefined;
}

/** Sleeps one poll interval; false when the wait's limit ended it (throws when `signal` did). */
async function pollPause(s: EmitterState, signal: AbortSignal, limit: AbortSignal): Promise<boolean> {
  try {
    await sleep(s.o.pollMs, undefined, { signal: limit });
    return true;
  } catch {
    if (signal.aborted) throw signal.reason;
    return false;
  }
}

/** Registers once; concurrent callers share the attempt. Undefined when it did not succeed. */
function connect(s: EmitterState, signal: AbortSignal): Promise<Registration | undefined> {
  if (s.reg) return Promise.resolve(s.reg);
  s.connecting ??= register(s, signal).finally(() => {
    s.connecting = undefined;
  });
  return s.connecting;
}

/**
 * One status-env under registration `r`: "restarted" when the run-api's step went back, else
 * whether its queue has room for us (announcing a full queue once).
 */
async function capacityOnce(
  s: EmitterState,
  r: Registration,
  limit: AbortSignal,
  announced: boolean,
): Promise<"restarted" | "room" | "full"> {
  const { o } = s;
  const status = await o.client.statusEnv(r.envId, limit);
  if (apiRestarted(s.lastStep, status.current_step)) {
    forget(s, `the run-api's step went back from ${s.lastStep} to ${status.current_step} (it restarted)`);
    return "restarted";
  }
  s.lastStep = status.current_step;
  s.lastSelfQueue = status.self_queue_size;
  const batchSize = r.batchSize === -1 ? (await o.client.info(limit)).batch_size : r.batchSize;
  if (batchSize !== r.batchSize) s.reg = { ...r, batchSize };
  const bp = { groupSize: o.register.group_size, batchSize, maxBatchesOffpolicy: o.maxBatchesOffpolicy };
  if (!shouldPause(status.queue_size, bp)) return "room";
  if (!announced) {
    o.onEvent?.(
      `atropos: queue full (queue_size ${status.queue_size} × group ${bp.groupSize} ≥ ${bp.maxBatchesOffpolicy} × batch ${batchSize}); pausing`,
    );
  }
  return "full";
}

/**
 * Waits while the run-api's queue is full for us, registering again when the API forgot this env.
 * Returns false when the wait hit `waitMs` (or registration did not succeed).
 */
async function waitForCapacity(s: EmitterState, signal: AbortSignal): Promise<boolean> {
  using wait = atroposWait(s, signal);
  const limit = wait.signal;
  let announced = false;
  for (;;) {
    // a registration made in this loop is not given up again on a failing status-env (no churn)
    const known = s.reg !== undefined;
    const r = await connect(s, signal);
    if (!r) return false;
    try {
      const c = await capacityOnce(s, r, limit, announced);
      if (c === "restarted") continue;
      if (c === "room") return true;
      announced = true;
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      if (limit.aborted) return false;
      s.lastError = (err as Error).message;
      // the run-api answers status-env for an env id it does not know with 500 (IndexError)
      if (known && err instanceof AtroposError && err.details.status === 500 && (await answers(s, limit))) {
        forget(s, `status-env fails for env ${r.envId} while the run-api answers (it restarted)`);
        continue;
      }
    }
    if (!(await pollPause(s, signal, limit))) return false;
  }
}

/** Whether the run-api answers at all (`GET /info`). */
async function answers(s: EmitterState, signal: AbortSignal): Promise<boolean> {
  try {
    await s.o.client.info(signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * After a send whose answer was lost: whether the env's queue grew past `before` (the group
 * arrived; sends are one at a time, and a trainer only shrinks the queue). A run-api whose step
 * went back below `step` restarted and lost its queue: false.
 */
async function arrived(
  s: EmitterState,
  envId: number,
  before: number | undefined,
  signal: AbortSignal,
  step?: number,
): Promise<boolean> {
  if (before === undefined) return false;
  try {
    const status = await s.o.client.statusEnv(envId, signal);
    if (apiRestarted(step, status.current_step)) return false;
    return (status.self_queue_size ?? -1) > before;
  } catch {
    return false;
  }
}

/**
 * A group an earlier run (or attempt) was sending when its answer was lost or it was killed: if
 * the same run-api's queue for that env shows it arrived, it is marked sent and not sent again.
 */
async function arrivedEarlier(s: EmitterState, groupId: string, signal: AbortSignal): Promise<boolean> {
  const { o } = s;
  s.doubts ??= inDoubtGroups(o.markFile);
  const d = (await s.doubts).get(groupId);
  if (!d || d.api !== o.client.url || d.env_id === undefined) return false;
  using check = createDeadline({
    signals: [signal],
    timeout: { ms: 30_000, limit: "the in-doubt queue check" },
  });
  if (!(await arrived(s, d.env_id, d.queued_before, check.signal, d.step))) return false;
  await mark(s, groupId, { status: "sent", env_id: d.env_id, api: o.client.url, confirmed_by: "queue" });
  o.onEvent?.(
    `atropos: group ${groupId} was in doubt (sent before, answer unknown); the run-api's queue has it`,
  );
  return true;
}

async function mark(s: EmitterState, groupId: string, m: Omit<AtroposMark, "group_id" | "at">) {
  await appendJsonLine(
    s.o.markFile,
    AtroposMark.parse({ group_id: groupId, ...m, at: new Date().toISOString() }),
  );
}

/** Sends a group (marked `sending` already) with retries; a lost answer is checked against the queue. */
async function sendWithRetries(
  s: EmitterState,
  groupId: string,
  body: ScoredDataGroup,
  r: Registration,
  queuedBefore: number | undefined,
  signal: AbortSignal,
): Promise<PushResult> {
  const { o } = s;
  for (let attempt = 1; ; attempt++) {
    try {
      await o.client.scoredData(body, signal);
      await mark(s, groupId, { status: "sent", env_id: r.envId, api: o.client.url, confirmed_by: "reply" });
      return { status: "sent", attempts: attempt };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      const retryable = err instanceof AtroposError ? err.retryable : true;
      s.lastError = (err as Error).message;
      // no answer at all: the request may have been queued; the queue tells, where it can
      const noAnswer = err instanceof AtroposError && err.details.status === undefined;
      using check = createDeadline({
        signals: [signal],
        timeout: { ms: 30_000, limit: "the lost-answer queue check" },
      });
      if (noAnswer && (await arrived(s, r.envId, queuedBefore, check.signal))) {
        await mark(s, groupId, { status: "sent", env_id: r.envId, api: o.client.url, confirmed_by: "queue" });
        o.onEvent?.(`atropos: the answer to group ${groupId} was lost, but the run-api's queue has it`);
        return { status: "sent", attempts: attempt };
      }
      if (!retryable || attempt >= o.attempts) {
        return { status: "pending", detail: `send failed after ${attempt} attempt(s): ${s.lastError}` };
      }
      await sleep(o.backoffMs * 2 ** (attempt - 1), undefined, { signal });
    }
  }
}

/** Applies the rules, waits for capacity, sends with retries, and marks the result. */
async function push(
  s: EmitterState,
  groupId: string,
  group: ScoredDataGroup,
  signal: AbortSignal,
): Promise<PushResult> {
  const { o } = s;
  const first = await connect(s, signal);
  if (!first) return { status: "pending", detail: s.lastError ?? "not registered" };
  const verdict = checkGroup(group, {
    groupSize: o.register.group_size,
    dropEqualScores: o.dropEqualScores,
    maxTokenLen: first.maxTokenLen,
  });
  if (!verdict.send) {
    await mark(s, groupId, { status: "dropped", reason: verdict.reason, detail: verdict.detail });
    return { status: "dropped", reason: verdict.reason, detail: verdict.detail };
  }
  if (!(await waitForCapacity(s, signal))) {
    return {
      status: "pending",
      detail: s.lastError ?? `the run-api's queue stayed full for --atropos-wait (${o.waitMs} ms)`,
    };
  }
  const r = s.reg;
  if (!r) return { status: "pending", detail: s.lastError ?? "not registered" };
  const tooLarge = batchSizeProblem(group.tokens.length, r.batchSize);
  if (tooLarge) {
    s.lastError = tooLarge;
    return { status: "pending", detail: tooLarge };
  }
  if (await arrivedEarlier(s, groupId, signal)) return { status: "sent", attempts: 0 };
  const queuedBefore = s.lastSelfQueue;
  await mark(s, groupId, {
    status: "sending",
    env_id: r.envId,
    api: o.client.url,
    ...(queuedBefore !== undefined ? { queued_before: queuedBefore } : {}),
    ...(s.lastStep !== undefined ? { step: s.lastStep } : {}),
  });
  return sendWithRetries(s, groupId, { ...group, env_id: r.envId }, r, queuedBefore, signal);
}

/** Tells the run-api this env is leaving (best effort, bounded). */
async function disconnect(s: EmitterState, signal: AbortSignal): Promise<void> {
  if (!s.reg) return;
  using bound = createDeadline({
    signals: [signal],
    timeout: { ms: 5_000, limit: "the disconnect-env bound" },
  });
  try {
    await s.o.client.disconnectEnv(s.reg.envId, bound.signal);
  } catch {
    // leaving anyway; the run-api marks envs disconnected on its own terms
  }
}

/**
 * Sends groups to an Atropos run-api the way an Atropos environment does: register (waiting for
 * the trainer), honour the group rules and back-pressure from `status-env`, retry 5xx, and mark
 * each group sent or dropped in `atropos-sent.jsonl`. A group it cannot send stays pending (it is
 * already in groups.jsonl) and is retried by `--resume`; nothing is lost.
 *
 * A run-api that restarted (its step went back, or status-env fails for our env id while the API
 * answers) has forgotten this env: the emitter registers again before sending. A send whose answer
 * was lost is checked against the env's queue (`self_queue_size` grew: it arrived) before it is
 * sent again. Delivery is at least once: each group carries `group_overrides.group_id` for a
 * trainer to drop a repeat (docs/reference/rollout.md).
 */
export function createAtroposEmitter(o: AtroposEmitterOptions) {
  const s: EmitterState = {
    o,
    reg: undefined,
    connecting: undefined,
    lastError: undefined,
    lastStep: undefined,
    lastSelfQueue: undefined,
    doubts: undefined,
  };
  return {
    connect: (signal: AbortSignal) => connect(s, signal),
    waitForCapacity: (signal: AbortSignal) => waitForCapacity(s, signal),
    push: (groupId: string, group: ScoredDataGroup, signal: AbortSignal) => push(s, groupId, group, signal),
    disconnect: (signal: AbortSignal) => disconnect(s, signal),
    get registration() {
      return s.reg;
    },
  };
}

export type AtroposEmitter = ReturnType<typeof createAtroposEmitter>;

/** A final mark: the group reached the run-api, or a rule dropped it. */
export type FinalMark = AtroposMark & { readonly status: "sent" | "dropped" };

/** Group ids already marked sent or dropped in `atropos-sent.jsonl` (the last final mark wins). */
export async function markedGroups(markFile: string): Promise<Map<string, FinalMark>> {
  const { records } = await readJsonl(markFile, AtroposMark);
  const out = new Map<string, FinalMark>();
  for (const m of records) if (m.status !== "sending") out.set(m.group_id, m as FinalMark);
  return out;
}

/** Groups whose marks end with `sending` and have no final mark: in doubt. */
export async function inDoubtGroups(markFile: string): Promise<Map<string, AtroposMark>> {
  const { records } = await readJsonl(markFile, AtroposMark);
  const out = new Map<string, AtroposMark>();
  const final = new Set<string>();
  for (const m of records) {
    if (m.status === "sending") out.set(m.group_id, m);
    else final.add(m.group_id);
  }
  for (const id of final) out.delete(id);
  return out;
}
