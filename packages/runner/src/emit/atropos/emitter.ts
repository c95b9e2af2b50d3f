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
 * trainer to drop a repeat (docs/rollout.md).
 */
export function createAtroposEmitter(o: AtroposEmitterOptions) {
  let reg: Registration | undefined;
  let connecting: Promise<Registration | undefined> | undefined;
  let lastError: string | undefined;
  /** The run-api's step and our queued groups at the last status-env (undefined: not seen yet). */
  let lastStep: number | undefined;
  let lastSelfQueue: number | undefined;

  /** The run-api no longer knows our env id: the next connect registers again. */
  const forget = (why: string) => {
    if (!reg) return;
    o.onEvent?.(`atropos: ${why}; env ${reg.envId} is gone, registering again`);
    reg = undefined;
    lastStep = undefined;
    lastSelfQueue = undefined;
  };

  /** `--atropos-wait` bounds one wait (trainer start, a full queue); GC-safe (createDeadline). */
  const atroposWait = (signal: AbortSignal) =>
    createDeadline({ signals: [signal], timeout: { ms: o.waitMs, limit: "--atropos-wait" } });

  async function register(signal: AbortSignal): Promise<Registration | undefined> {
    using wait = atroposWait(signal);
    const limit = wait.signal;
    let announced = false;
    for (;;) {
      try {
        const r = await o.client.registerEnv(o.register, limit);
        if (r.status === "success" && "env_id" in r && typeof r.env_id === "number") {
          const info = await o.client.info(limit);
          reg = { envId: r.env_id, batchSize: info.batch_size, maxTokenLen: info.max_token_len };
          o.onEvent?.(
            `atropos: registered as env ${reg.envId} (batch_size ${reg.batchSize}, max_token_len ${reg.maxTokenLen})`,
          );
          return reg;
        }
        if (!announced) o.onEvent?.(`atropos: run-api says "${r.status}"; waiting (up to ${o.waitMs} ms)`);
        announced = true;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (limit.aborted) break;
        if (err instanceof AtroposError && !err.retryable) throw err;
        lastError = (err as Error).message;
      }
      try {
        await sleep(o.pollMs, undefined, { signal: limit });
      } catch {
        if (signal.aborted) throw signal.reason;
        break;
      }
    }
    lastError = `the run-api did not register this env within --atropos-wait (${o.waitMs} ms)${lastError ? ` (last error: ${lastError})` : " (the trainer has not started)"}`;
    o.onEvent?.(`atropos: ${lastError}; groups stay on disk`);
    return undefined;
  }

  /** Registers once; concurrent callers share the attempt. Undefined when it did not succeed. */
  function connect(signal: AbortSignal): Promise<Registration | undefined> {
    if (reg) return Promise.resolve(reg);
    connecting ??= register(signal).finally(() => {
      connecting = undefined;
    });
    return connecting;
  }

  /**
   * Waits while the run-api's queue is full for us, registering again when the API forgot this env.
   * Returns false when the wait hit `waitMs` (or registration did not succeed).
   */
  async function waitForCapacity(signal: AbortSignal): Promise<boolean> {
    using wait = atroposWait(signal);
    const limit = wait.signal;
    let announced = false;
    for (;;) {
      // a registration made in this loop is not given up again on a failing status-env (no churn)
      const known = reg !== undefined;
      const r = await connect(signal);
      if (!r) return false;
      try {
        const status = await o.client.statusEnv(r.envId, limit);
        if (apiRestarted(lastStep, status.current_step)) {
          forget(`the run-api's step went back from ${lastStep} to ${status.current_step} (it restarted)`);
          continue;
        }
        lastStep = status.current_step;
        lastSelfQueue = status.self_queue_size;
        const batchSize = r.batchSize === -1 ? (await o.client.info(limit)).batch_size : r.batchSize;
        if (batchSize !== r.batchSize) reg = { ...r, batchSize };
        const bp = {
          groupSize: o.register.group_size,
          batchSize,
          maxBatchesOffpolicy: o.maxBatchesOffpolicy,
        };
        if (!shouldPause(status.queue_size, bp)) return true;
        if (!announced) {
          o.onEvent?.(
            `atropos: queue full (queue_size ${status.queue_size} × group ${bp.groupSize} ≥ ${bp.maxBatchesOffpolicy} × batch ${batchSize}); pausing`,
          );
        }
        announced = true;
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        if (limit.aborted) return false;
        lastError = (err as Error).message;
        // the run-api answers status-env for an env id it does not know with 500 (IndexError)
        if (known && err instanceof AtroposError && err.details.status === 500 && (await answers(limit))) {
          forget(`status-env fails for env ${r.envId} while the run-api answers (it restarted)`);
          continue;
        }
      }
      try {
        await sleep(o.pollMs, undefined, { signal: limit });
      } catch {
        if (signal.aborted) throw signal.reason;
        return false;
      }
    }
  }

  /** Whether the run-api answers at all (`GET /info`). */
  async function answers(signal: AbortSignal): Promise<boolean> {
    try {
      await o.client.info(signal);
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
    envId: number,
    before: number | undefined,
    signal: AbortSignal,
    step?: number,
  ): Promise<boolean> {
    if (before === undefined) return false;
    try {
      const status = await o.client.statusEnv(envId, signal);
      if (apiRestarted(step, status.current_step)) return false;
      return (status.self_queue_size ?? -1) > before;
    } catch {
      return false;
    }
  }

  let doubts: Promise<Map<string, AtroposMark>> | undefined;
  /**
   * A group an earlier run (or attempt) was sending when its answer was lost or it was killed: if
   * the same run-api's queue for that env shows it arrived, it is marked sent and not sent again.
   */
  async function arrivedEarlier(groupId: string, signal: AbortSignal): Promise<boolean> {
    doubts ??= inDoubtGroups(o.markFile);
    const d = (await doubts).get(groupId);
    if (!d || d.api !== o.client.url || d.env_id === undefined) return false;
    using check = createDeadline({
      signals: [signal],
      timeout: { ms: 30_000, limit: "the in-doubt queue check" },
    });
    if (!(await arrived(d.env_id, d.queued_before, check.signal, d.step))) return false;
    await mark(groupId, { status: "sent", env_id: d.env_id, api: o.client.url, confirmed_by: "queue" });
    o.onEvent?.(
      `atropos: group ${groupId} was in doubt (sent before, answer unknown); the run-api's queue has it`,
    );
    return true;
  }

  async function mark(groupId: string, m: Omit<AtroposMark, "group_id" | "at">) {
    await appendJsonLine(
      o.markFile,
      AtroposMark.parse({ group_id: groupId, ...m, at: new Date().toISOString() }),
    );
  }

  /** Applies the rules, waits for capacity, sends with retries, and marks the result. */
  async function push(groupId: string, group: ScoredDataGroup, signal: AbortSignal): Promise<PushResult> {
    const first = await connect(signal);
    if (!first) return { status: "pending", detail: lastError ?? "not registered" };
    const verdict = checkGroup(group, {
      groupSize: o.register.group_size,
      dropEqualScores: o.dropEqualScores,
      maxTokenLen: first.maxTokenLen,
    });
    if (!verdict.send) {
      await mark(groupId, { status: "dropped", reason: verdict.reason, detail: verdict.detail });
      return { status: "dropped", reason: verdict.reason, detail: verdict.detail };
    }
    if (!(await waitForCapacity(signal))) {
      return {
        status: "pending",
        detail: lastError ?? `the run-api's queue stayed full for --atropos-wait (${o.waitMs} ms)`,
      };
    }
    const r = reg;
    if (!r) return { status: "pending", detail: lastError ?? "not registered" };
    const tooLarge = batchSizeProblem(group.tokens.length, r.batchSize);
    if (tooLarge) {
      lastError = tooLarge;
      return { status: "pending", detail: tooLarge };
    }
    if (await arrivedEarlier(groupId, signal)) return { status: "sent", attempts: 0 };
    const queuedBefore = lastSelfQueue;
    await mark(groupId, {
      status: "sending",
      env_id: r.envId,
      api: o.client.url,
      ...(queuedBefore !== undefined ? { queued_before: queuedBefore } : {}),
      ...(lastStep !== undefined ? { step: lastStep } : {}),
    });
    const body: ScoredDataGroup = { ...group, env_id: r.envId };
    for (let attempt = 1; ; attempt++) {
      try {
        await o.client.scoredData(body, signal);
        await mark(groupId, { status: "sent", env_id: r.envId, api: o.client.url, confirmed_by: "reply" });
        return { status: "sent", attempts: attempt };
      } catch (err) {
        if (signal.aborted) throw signal.reason;
        const retryable = err instanceof AtroposError ? err.retryable : true;
        lastError = (err as Error).message;
        // no answer at all: the request may have been queued; the queue tells, where it can
        const noAnswer = err instanceof AtroposError && err.details.status === undefined;
        using check = createDeadline({
          signals: [signal],
          timeout: { ms: 30_000, limit: "the lost-answer queue check" },
        });
        if (noAnswer && (await arrived(r.envId, queuedBefore, check.signal))) {
          await mark(groupId, { status: "sent", env_id: r.envId, api: o.client.url, confirmed_by: "queue" });
          o.onEvent?.(`atropos: the answer to group ${groupId} was lost, but the run-api's queue has it`);
          return { status: "sent", attempts: attempt };
        }
        if (!retryable || attempt >= o.attempts) {
          return { status: "pending", detail: `send failed after ${attempt} attempt(s): ${lastError}` };
        }
        await sleep(o.backoffMs * 2 ** (attempt - 1), undefined, { signal });
      }
    }
  }

  /** Tells the run-api this env is leaving (best effort, bounded). */
  async function disconnect(signal: AbortSignal): Promise<void> {
    if (!reg) return;
    using bound = createDeadline({
      signals: [signal],
      timeout: { ms: 5_000, limit: "the disconnect-env bound" },
    });
    try {
      await o.client.disconnectEnv(reg.envId, bound.signal);
    } catch {
      // leaving anyway; the run-api marks envs disconnected on its own terms
    }
  }

  return {
    connect,
    waitForCapacity,
    push,
    disconnect,
    get registration() {
      return reg;
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
