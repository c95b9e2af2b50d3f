import { match } from "ts-pattern";
import { z } from "zod";
import { type AskDecision, AskPolicy, type AskPolicyInput, decideAsk } from "./ask-policy.js";
import type { ClineClient } from "./client.js";
import { ClineVendorError } from "./errors.js";
import { type ClineMessage, fromStateMessage } from "./messages.js";
import { type Outcome, outcomeFromAbort } from "./outcome.js";
import {
  apiConfigurationFor,
  ProviderConfig,
  type ProviderConfigInput,
  trajectoryToken,
} from "./provider.js";

/** Our own watchdog's limits (Cline has no request timeout of its own: the SDK waits 600 s per try). */
export const TaskLimits = z
  .object({
    wallClockMs: z
      .number()
      .int()
      .positive()
      .default(30 * 60_000)
      .describe("whole task, newTask to end"),
    idleMs: z
      .number()
      .int()
      .positive()
      .default(5 * 60_000)
      .describe("longest time without any new or changed message (a hung policy, a stuck core)"),
    maxModelRequests: z
      .number()
      .int()
      .positive()
      .default(100)
      .describe("model requests allowed; the next one ends the task as limits_exceeded"),
    maxToolCalls: z
      .number()
      .int()
      .positive()
      .default(200)
      .describe("tool/command uses allowed; the next one is not approved and ends the task"),
    requestTimeoutMs: z
      .number()
      .int()
      .positive()
      .optional()
      .describe("per-request timeout handed to Cline's provider SDK (request_timeout_ms)"),
  })
  .strict();
export type TaskLimits = z.infer<typeof TaskLimits>;
export type TaskLimitsInput = z.input<typeof TaskLimits>;

/** One model request of the task, relative to newTask. */
export interface TurnTiming {
  readonly index: number;
  readonly startMs: number;
  /** First streamed model output of this turn. */
  firstTokenMs?: number;
  /** When Cline recorded the request's usage (the stream finished). */
  endMs?: number;
  tokensIn?: number;
  tokensOut?: number;
}

export interface TaskRun {
  readonly outcome: Outcome;
  /** Empty when the task never started (configuration failed). */
  readonly taskId: string;
  readonly timings: {
    /** Provider/settings configuration before newTask. */
    readonly configureMs: number;
    /** newTask → first streamed model output. */
    readonly firstTokenMs?: number;
    readonly turns: readonly TurnTiming[];
    /** newTask → end (including cancel/clear). */
    readonly totalMs: number;
  };
  readonly counts: {
    readonly modelRequests: number;
    readonly toolCalls: number;
    readonly apiFailures: number;
  };
}

/** What the driver reports while it runs (for progress output and logs). */
export type DriverEvent =
  | { readonly type: "configured"; readonly ms: number }
  | { readonly type: "task_started"; readonly taskId: string }
  | { readonly type: "message"; readonly message: ClineMessage }
  | { readonly type: "turn_started"; readonly index: number; readonly atMs: number }
  | { readonly type: "ask"; readonly ask: string; readonly decision: AskDecision["action"] }
  | { readonly type: "ended"; readonly outcome: Outcome };

export interface RunTaskOptions {
  readonly client: ClineClient;
  readonly prompt: string;
  readonly provider: ProviderConfigInput;
  readonly limits?: TaskLimitsInput;
  readonly askPolicy?: AskPolicyInput;
  /** Aborting ends the task (cancelTask + clearTask) with a timeout/infra_error outcome. */
  readonly signal?: AbortSignal;
  readonly onEvent?: (event: DriverEvent) => void;
  /** Let Cline auto-approve everything itself ("yolo") instead of answering asks (benchmarks only). */
  readonly autoApproveAll?: boolean;
  /** Use native function calling when the model id supports it (Cline's default: true). */
  readonly nativeToolCalls?: boolean;
  /** Cline's consecutive-mistake limit. Default 3. */
  readonly maxConsecutiveMistakes?: number;
  /** Deadline of each control call (configure, answer, cancel). Default 15 s. */
  readonly callDeadlineMs?: number;
}

const TOOL_ASKS = new Set(["tool", "command", "browser_action_launch", "use_mcp_server"]);
const MODEL_OUTPUT_SAYS = new Set(["text", "reasoning", "completion_result"]);

/** Why the idle limit fired: a quiet command the agent runs, or nothing at all (pure). */
export function idleDetail(idleMs: number, runningCommand: string | undefined, lastError?: string): string {
  const error = lastError ? `; last error: ${lastError.split("\n")[0]}` : "";
  if (runningCommand !== undefined) {
    const cmd = runningCommand.split("\n")[0]!.slice(0, 200);
    return `the agent's command printed nothing for ${idleMs} ms (\`${cmd}\`); raise the idle limit for long quiet commands${error}`;
  }
  return `no new message from the core for ${idleMs} ms (no model output, no tool progress)${error}`;
}

function describe(err: unknown): string {
  if (err instanceof ClineVendorError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** Parses the JSON Cline keeps in an `api_req_started` message's text. */
function apiReqInfo(text: string): { tokensIn?: number; tokensOut?: number; cost?: number; done: boolean } {
  try {
    const v = JSON.parse(text) as Record<string, unknown>;
    const num = (k: string) => (typeof v[k] === "number" ? (v[k] as number) : undefined);
    const tokensIn = num("tokensIn");
    const tokensOut = num("tokensOut");
    const cost = num("cost");
    return {
      ...(tokensIn !== undefined ? { tokensIn } : {}),
      ...(tokensOut !== undefined ? { tokensOut } : {}),
      ...(cost !== undefined ? { cost } : {}),
      done:
        cost !== undefined || v["cancelReason"] !== undefined || v["streamingFailedMessage"] !== undefined,
    };
  } catch {
    return { done: false };
  }
}

/** What the driver tracks while a task runs; shared by the named steps of {@link runClineTask}. */
interface TaskState {
  readonly options: RunTaskOptions;
  readonly client: ClineClient;
  readonly limits: TaskLimits;
  readonly policy: AskPolicy;
  /** Deadline of each control call. */
  readonly callMs: number;
  readonly tConfigure: number;
  taskId: string;
  outcome: Outcome | undefined;
  tStart: number;
  firstTokenMs: number | undefined;
  readonly turns: TurnTiming[];
  readonly counts: { modelRequests: number; toolCalls: number; apiFailures: number };
  /** ts → fingerprint of the last version seen. */
  readonly seen: Map<number, string>;
  readonly preexisting: Set<number>;
  readonly apiReqTurn: Map<number, TurnTiming>;
  readonly toolTs: Set<number>;
  readonly answered: Set<number>;
  completionText: string | undefined;
  lastError: string | undefined;
  /** The command the agent was approved to run, until the next model request starts. */
  runningCommand: string | undefined;
  lastProgress: number;
  wake: (() => void) | undefined;
  readonly pending: Promise<void>[];
  readonly streams: AbortController;
}

function initialTaskState(options: RunTaskOptions): TaskState {
  return {
    options,
    client: options.client,
    limits: TaskLimits.parse(options.limits ?? {}),
    policy: AskPolicy.parse(options.askPolicy ?? {}),
    callMs: options.callDeadlineMs ?? 15_000,
    tConfigure: performance.now(),
    taskId: "",
    outcome: undefined,
    tStart: performance.now(),
    firstTokenMs: undefined,
    turns: [],
    counts: { modelRequests: 0, toolCalls: 0, apiFailures: 0 },
    seen: new Map(),
    preexisting: new Set(),
    apiReqTurn: new Map(),
    toolTs: new Set(),
    answered: new Set(),
    completionText: undefined,
    lastError: undefined,
    runningCommand: undefined,
    lastProgress: performance.now(),
    wake: undefined,
    pending: [],
    streams: new AbortController(),
  };
}

function emit(st: TaskState, e: DriverEvent): void {
  try {
    st.options.onEvent?.(e);
  } catch {
    // a failing observer must not break the task
  }
}

/** Records the first end only and wakes the waiting loop. */
function end(st: TaskState, o: Outcome): void {
  if (st.outcome) return;
  st.outcome = o;
  st.wake?.();
}

function since(st: TaskState): number {
  return Math.round(performance.now() - st.tStart);
}

/** Our approvals: everything by Cline itself in "yolo" mode, else nothing (we answer every ask). */
export function autoApprovalSettingsFor(currentVersion: number | undefined, all: boolean) {
  return {
    // The core ignores settings whose version is not newer than its own.
    version: (currentVersion ?? 0) + 1,
    actions: {
      readFiles: all,
      readFilesExternally: all,
      editFiles: all,
      editFilesExternally: all,
      executeSafeCommands: all,
      executeAllCommands: all,
      useBrowser: false,
      useMcp: false,
    },
    enableNotifications: false,
  };
}

/** Provider, settings and approvals before newTask; remembers the messages already there. Throws. */
async function configureCore(st: TaskState, provider: ProviderConfig): Promise<void> {
  const { client, callMs, options } = st;
  options.signal?.throwIfAborted();
  const state = await client.state.getLatestState({ deadlineMs: callMs });
  if (state.currentTaskItem) await client.task.clearTask({ deadlineMs: callMs });
  const token = provider.apiKey ?? trajectoryToken();
  await client.models.updateApiConfigurationProto(
    { apiConfiguration: apiConfigurationFor(provider, token, st.limits.requestTimeoutMs) },
    { deadlineMs: callMs },
  );
  await client.state.updateSettings(
    {
      mode: "ACT",
      telemetrySetting: "disabled",
      enableCheckpointsSetting: false,
      planActSeparateModelsSetting: false,
      mcpMarketplaceEnabled: false,
      yoloModeToggled: options.autoApproveAll === true,
      maxConsecutiveMistakes: options.maxConsecutiveMistakes ?? 3,
      ...(options.nativeToolCalls !== undefined ? { nativeToolCallEnabled: options.nativeToolCalls } : {}),
    },
    { deadlineMs: callMs },
  );
  const all = options.autoApproveAll === true;
  await client.state.updateAutoApprovalSettings(
    autoApprovalSettingsFor(state.autoApprovalSettings?.version, all),
    { deadlineMs: callMs },
  );
  const fresh = await client.state.getLatestState({ deadlineMs: callMs });
  for (const raw of fresh.clineMessages) {
    try {
      st.preexisting.add(fromStateMessage(raw).ts);
    } catch {
      // not a message we can read; it cannot be ours either
    }
  }
}

/** The run of a task whose configuration failed (the caller's abort wins over the error). */
function configureFailed(st: TaskState, err: unknown): TaskRun {
  const signal = st.options.signal;
  const o = signal?.aborted
    ? outcomeFromAbort(signal.reason)
    : ({ kind: "infra_error", detail: `configuring the core failed: ${describe(err)}` } as const);
  emit(st, { type: "ended", outcome: o });
  return {
    outcome: o,
    taskId: st.taskId,
    timings: { configureMs: Math.round(performance.now() - st.tConfigure), turns: st.turns, totalMs: 0 },
    counts: st.counts,
  };
}

function answerAsk(st: TaskState, ts: number, kind: string, decision: AskDecision): void {
  emit(st, { type: "ask", ask: kind, decision: decision.action });
  const send = (responseType: "yesButtonClicked" | "noButtonClicked" | "messageResponse", text?: string) => {
    const p = st.client.task
      .askResponse({ responseType, ...(text !== undefined ? { text } : {}) }, { deadlineMs: st.callMs })
      .catch((err: unknown) => {
        end(st, { kind: "infra_error", detail: `answering the '${kind}' ask failed: ${describe(err)}` });
      });
    st.pending.push(p);
  };
  match(decision)
    .with({ action: "approve" }, { action: "retry" }, () => send("yesButtonClicked"))
    .with({ action: "deny" }, () => send("noButtonClicked"))
    .with({ action: "reply" }, (d) => send("messageResponse", d.text))
    .with({ action: "ignore" }, () => {})
    .with({ action: "end" }, (d) => {
      if (d.answer === "deny") send("noButtonClicked");
      end(st, d.outcome);
    })
    .exhaustive();
  st.answered.add(ts);
}

/** What makes a message version new to us: partial flag, text and reasoning lengths, its kind (pure). */
export function messageFingerprint(m: ClineMessage): string {
  return `${m.partial ? 1 : 0}:${m.text.length}:${m.reasoning?.length ?? 0}:${m.ask ?? m.say}`;
}

/**
 * Whether a message is the model's output (pure). The first `text` say is the user's prompt echoed;
 * model output only follows a request, so nothing counts before the first turn.
 */
export function isModelOutput(m: ClineMessage, turnStarted: boolean): boolean {
  return (
    turnStarted &&
    ((m.type === "say" && MODEL_OUTPUT_SAYS.has(m.say ?? "")) ||
      (m.type === "ask" &&
        m.ask !== undefined &&
        (TOOL_ASKS.has(m.ask) || m.ask === "followup" || m.ask === "completion_result")))
  );
}

/** The end when the agent started model request `n` and the limit is `max` (pure). */
export function modelRequestsExceeded(n: number, max: number): Outcome | undefined {
  if (n <= max) return undefined;
  return {
    kind: "limits_exceeded",
    limit: "model_requests",
    detail: `the agent started model request ${n}; the limit is ${max}`,
  };
}

/** The end when the agent asked for tool call `n` and the limit is `max` (pure). */
export function toolCallsExceeded(n: number, max: number): Outcome | undefined {
  if (n <= max) return undefined;
  return {
    kind: "limits_exceeded",
    limit: "tool_calls",
    detail: `the agent asked for tool call ${n}; the limit is ${max}`,
  };
}

/**
 * A new or updated `api_req_started` say: starts a turn (once per ts) and fills its usage and end.
 * Returns true when the new turn went over the model-request limit and ended the task.
 */
function onApiReqStarted(st: TaskState, m: ClineMessage, now: number): boolean {
  let turn = st.apiReqTurn.get(m.ts);
  if (!turn) {
    st.runningCommand = undefined;
    turn = { index: st.turns.length, startMs: now };
    st.turns.push(turn);
    st.apiReqTurn.set(m.ts, turn);
    st.counts.modelRequests++;
    emit(st, { type: "turn_started", index: turn.index, atMs: now });
    const exceeded = modelRequestsExceeded(st.counts.modelRequests, st.limits.maxModelRequests);
    if (exceeded) {
      end(st, exceeded);
      return true;
    }
  }
  const info = apiReqInfo(m.text);
  if (info.tokensIn !== undefined) turn.tokensIn = info.tokensIn;
  if (info.tokensOut !== undefined) turn.tokensOut = info.tokensOut;
  if (info.done && turn.endMs === undefined) turn.endMs = now;
  return false;
}

function onSay(st: TaskState, m: ClineMessage, now: number, isNew: boolean): void {
  if (m.say === "api_req_started") {
    if (onApiReqStarted(st, m, now)) return;
  } else if (m.say === "completion_result") {
    st.completionText = m.text;
  } else if (m.say === "error") {
    st.lastError = m.text;
  }
  if (m.say !== undefined && TOOL_ASKS.has(m.say) && isNew && !st.toolTs.has(m.ts)) {
    // auto-approved tool use (yolo), reported as a say
    st.toolTs.add(m.ts);
    st.counts.toolCalls++;
  }
}

function onAsk(st: TaskState, m: ClineMessage): void {
  if (m.partial || st.answered.has(m.ts) || m.ask === undefined) return;
  if (TOOL_ASKS.has(m.ask) && !st.toolTs.has(m.ts)) {
    st.toolTs.add(m.ts);
    st.counts.toolCalls++;
    const exceeded = toolCallsExceeded(st.counts.toolCalls, st.limits.maxToolCalls);
    if (exceeded) {
      st.answered.add(m.ts);
      end(st, exceeded);
      return;
    }
  }
  if (m.ask === "api_req_failed") st.counts.apiFailures++;
  const decision = decideAsk(m.ask, m.text, st.policy, {
    apiFailures: st.counts.apiFailures,
    ...(st.completionText !== undefined ? { completionText: st.completionText } : {}),
  });
  if (m.ask === "command" && decision.action === "approve") st.runningCommand = m.text;
  answerAsk(st, m.ts, m.ask, decision);
}

/** Message handling for both streams: skips old and unchanged versions, then a say or an ask. */
function onMessage(st: TaskState, m: ClineMessage): void {
  if (st.outcome || st.preexisting.has(m.ts)) return;
  const fingerprint = messageFingerprint(m);
  if (st.seen.get(m.ts) === fingerprint) return;
  const isNew = !st.seen.has(m.ts);
  st.seen.set(m.ts, fingerprint);
  st.lastProgress = performance.now();
  emit(st, { type: "message", message: m });
  const now = since(st);
  const current = st.turns[st.turns.length - 1];
  if (isModelOutput(m, current !== undefined)) {
    st.firstTokenMs ??= now;
    if (current && current.firstTokenMs === undefined) current.firstTokenMs = now;
  }
  if (m.type === "say") onSay(st, m, now, isNew);
  else onAsk(st, m);
}

async function consume(st: TaskState, name: string, source: AsyncIterable<ClineMessage[]>): Promise<void> {
  try {
    for await (const batch of source) for (const m of batch) onMessage(st, m);
    if (!st.outcome && !st.streams.signal.aborted)
      end(st, { kind: "infra_error", detail: `the core closed its ${name} stream (did it exit?)` });
  } catch (err) {
    if (!st.outcome && !st.streams.signal.aborted)
      end(st, { kind: "infra_error", detail: `the core's ${name} stream failed: ${describe(err)}` });
  }
}

async function* single(src: AsyncIterable<ClineMessage>): AsyncIterable<ClineMessage[]> {
  for await (const m of src) yield [m];
}

/**
 * The messages of each state post. Cline posts its whole state after every message, so a task of
 * n messages would have every message parsed and checked n times over: a message this stream
 * already delivered unchanged ({@link rawStateFingerprint}) is skipped before it is parsed.
 */
async function* fromState(
  src: ReturnType<ClineClient["state"]["subscribeToState"]>,
): AsyncIterable<ClineMessage[]> {
  const delivered = new Map<number, string>();
  for await (const s of src) {
    const out: ClineMessage[] = [];
    for (const raw of s.clineMessages) {
      const fp = rawStateFingerprint(raw);
      if (fp !== undefined && delivered.get(fp.ts) === fp.print) continue;
      try {
        out.push(fromStateMessage(raw));
        if (fp !== undefined) delivered.set(fp.ts, fp.print);
      } catch {
        // a message shape we do not read
      }
    }
    yield out;
  }
}

/**
 * What identifies a version of a raw `clineMessages` entry, read without parsing it: its ts, kind,
 * partial flag and text and reasoning lengths (what {@link messageFingerprint} compares after the
 * parse); undefined when the entry is not of the plain shape (then it is parsed as usual). Pure.
 */
export function rawStateFingerprint(raw: unknown): { ts: number; print: string } | undefined {
  if (raw === null || typeof raw !== "object") return undefined;
  const m = raw as Record<string, unknown>;
  const len = (v: unknown) => (typeof v === "string" ? v.length : v == null ? 0 : undefined);
  const [text, reasoning] = [len(m.text), len(m.reasoning)];
  if (typeof m.ts !== "number" || text === undefined || reasoning === undefined) return undefined;
  const kind = `${String(m.type)}:${String(m.ask)}:${String(m.say)}`;
  return { ts: m.ts, print: `${m.partial === true ? 1 : 0}:${text}:${reasoning}:${kind}` };
}

function subscribe(st: TaskState): Promise<void>[] {
  const { client, streams } = st;
  return [
    consume(st, "partial-message", single(client.ui.subscribeToPartialMessage({ signal: streams.signal }))),
    consume(st, "state", fromState(client.state.subscribeToState({ signal: streams.signal }))),
  ];
}

async function startTask(st: TaskState): Promise<void> {
  st.tStart = performance.now();
  st.lastProgress = st.tStart;
  if (st.outcome) return;
  try {
    st.taskId = await st.client.task.newTask({ text: st.options.prompt }, { deadlineMs: st.callMs });
    emit(st, { type: "task_started", taskId: st.taskId });
  } catch (err) {
    end(st, { kind: "infra_error", detail: `newTask failed: ${describe(err)}` });
  }
}

/** The watchdog's verdict at `now` (pure): wall clock first, then a stall (no progress for idleMs). */
export function watchdogVerdict(a: {
  readonly now: number;
  readonly tStart: number;
  readonly lastProgress: number;
  readonly limits: Pick<TaskLimits, "wallClockMs" | "idleMs">;
  readonly runningCommand: string | undefined;
  readonly lastError: string | undefined;
}): Outcome | undefined {
  const { now, limits } = a;
  if (now - a.tStart > limits.wallClockMs)
    return {
      kind: "timeout",
      limit: "wall_clock",
      detail: `the task ran longer than ${limits.wallClockMs} ms`,
    };
  if (now - a.lastProgress > limits.idleMs)
    return {
      kind: "timeout",
      limit: "idle",
      detail: idleDetail(limits.idleMs, a.runningCommand, a.lastError),
    };
  return undefined;
}

/** How long the core has to answer the liveness probe when the idle limit fires. */
export const CORE_PROBE_MS = 5_000;

/**
 * The end when the idle limit fired and the core was probed (pure): a core that does not answer a
 * control call is frozen or wedged — the machine's fault, `infra_error` (retried) — however quiet
 * the agent's command looked; a core that answers leaves the idle verdict as it is.
 */
export function idleEndOf(verdict: Outcome, probeFailure: string | undefined): Outcome {
  if (probeFailure === undefined) return verdict;
  return {
    kind: "infra_error",
    detail: `the Cline core stopped answering (a control call got no answer: ${probeFailure}) after ${verdict.detail.split(";")[0]}`,
  };
}

/** Whether the core was found not answering (its shutdown calls are then skipped: they would only wait). Pure. */
export const coreUnresponsive = (o: Outcome) =>
  o.kind === "infra_error" && o.detail.startsWith("the Cline core stopped answering");

/** The idle verdict after asking the core whether it still answers (bounded by {@link CORE_PROBE_MS}). */
async function probedIdleEnd(st: TaskState, verdict: Outcome): Promise<Outcome> {
  const failure = await st.client.state
    .getLatestState({ deadlineMs: Math.min(st.callMs, CORE_PROBE_MS) })
    .then(
      () => undefined,
      (err: unknown) => describe(err),
    );
  return idleEndOf(verdict, failure);
}

/** How often the watchdog looks: a tenth of the shorter limit, within 25–250 ms (pure). */
export function watchdogPeriodMs(limits: Pick<TaskLimits, "wallClockMs" | "idleMs">): number {
  return Math.min(250, Math.max(25, Math.floor(Math.min(limits.idleMs, limits.wallClockMs) / 10)));
}

/**
 * How long the watchdog itself was held up between two ticks (this process stopped by SIGSTOP, a
 * frozen VM, a starved CPU): the gap past a generous bound (8 periods, at least 1 s), else 0. That
 * time is nobody's in the task — the agent and the core ran on, or were stopped too — so it never
 * counts toward the idle limit. Pure.
 */
export function watchdogStallMs(prevTick: number, now: number, periodMs: number): number {
  const gap = now - prevTick;
  return gap > Math.max(1000, 8 * periodMs) ? gap - periodMs : 0;
}

/**
 * The task's clocks after a stall of `stallMs` (see {@link watchdogStallMs}): the last progress moves
 * on by it (never past now), so what the core sent while this process was stopped is read before
 * any idle verdict; the wall clock is pushed back by it too, at most by the wall-clock limit in all. Pure.
 */
export function creditStall(
  a: { readonly lastProgress: number; readonly stalledMs: number },
  stallMs: number,
  now: number,
  wallClockMs: number,
): { lastProgress: number; stalledMs: number } {
  return {
    lastProgress: Math.min(now, a.lastProgress + stallMs),
    stalledMs: Math.min(wallClockMs, a.stalledMs + stallMs),
  };
}

/** Waits until something ends the task, with the watchdog running; returns that end. */
async function waitForEnd(st: TaskState, onCallerAbort: () => void): Promise<Outcome> {
  let probing = false;
  const periodMs = watchdogPeriodMs(st.limits);
  let lastTick = performance.now();
  let stalledMs = 0;
  const watchdog = setInterval(() => {
    const now = performance.now();
    const stall = watchdogStallMs(lastTick, now, periodMs);
    lastTick = now;
    if (stall > 0) {
      // this process was held up: credit the time and give no verdict on this tick
      ({ lastProgress: st.lastProgress, stalledMs } = creditStall(
        { lastProgress: st.lastProgress, stalledMs },
        stall,
        now,
        st.limits.wallClockMs,
      ));
      return;
    }
    if (probing) return;
    const verdict = watchdogVerdict({
      now: now - stalledMs,
      tStart: st.tStart,
      lastProgress: st.lastProgress - stalledMs,
      limits: st.limits,
      runningCommand: st.runningCommand,
      lastError: st.lastError,
    });
    if (!verdict) return;
    if (verdict.kind !== "timeout" || verdict.limit !== "idle") return end(st, verdict);
    // quiet for the idle limit: is it the agent, or a core that no longer answers?
    probing = true;
    void probedIdleEnd(st, verdict).then((o) => end(st, o));
  }, periodMs);
  try {
    while (!st.outcome) {
      await new Promise<void>((r) => {
        st.wake = r;
      });
    }
  } finally {
    clearInterval(watchdog);
    st.options.signal?.removeEventListener("abort", onCallerAbort);
  }
  return st.outcome;
}

/** Leaves the core ready for the next task: cancel (unless completed), clear, flush, stop streams. */
async function leaveCoreReady(
  st: TaskState,
  finalOutcome: Outcome,
  consumers: Promise<void>[],
): Promise<void> {
  const { client, callMs } = st;
  // a frozen core answers nothing: its calls would only wait out their deadlines
  if (coreUnresponsive(finalOutcome)) {
    st.streams.abort();
    return;
  }
  await Promise.allSettled(st.pending);
  if (st.taskId) {
    if (finalOutcome.kind !== "completed") {
      await client.task.cancelTask({ deadlineMs: callMs }).catch(() => {});
    }
    await client.task.clearTask({ deadlineMs: callMs }).catch(() => {});
    await client.state.flushPendingState({ deadlineMs: callMs }).catch(() => {});
  }
  st.streams.abort();
  await Promise.allSettled(consumers);
}

/**
 * Runs one task on a started core and returns how it ended. Configures the provider (with a
 * per-trajectory token unless `provider.apiKey` is given), ACT mode, telemetry off, checkpoints
 * off, our own approvals; subscribes to both message streams; starts the task; answers asks (see
 * {@link decideAsk}); enforces {@link TaskLimits} with its own watchdog. Every end is an
 * {@link Outcome}; afterwards the task is cancelled (if still running) and cleared so the core can
 * run the next one. Throws only for invalid options.
 */
export async function runClineTask(options: RunTaskOptions): Promise<TaskRun> {
  const provider = ProviderConfig.parse(options.provider);
  const st = initialTaskState(options);
  const onCallerAbort = () => end(st, outcomeFromAbort(options.signal?.reason));
  try {
    await configureCore(st, provider);
  } catch (err) {
    return configureFailed(st, err);
  }
  const configureMs = Math.round(performance.now() - st.tConfigure);
  emit(st, { type: "configured", ms: configureMs });
  const consumers = subscribe(st);
  if (options.signal) {
    if (options.signal.aborted) onCallerAbort();
    else options.signal.addEventListener("abort", onCallerAbort, { once: true });
  }
  await startTask(st);
  const finalOutcome = await waitForEnd(st, onCallerAbort);
  await leaveCoreReady(st, finalOutcome, consumers);
  const totalMs = since(st);
  emit(st, { type: "ended", outcome: finalOutcome });
  const { firstTokenMs } = st;
  return {
    outcome: finalOutcome,
    taskId: st.taskId,
    timings: {
      configureMs,
      ...(firstTokenMs !== undefined ? { firstTokenMs } : {}),
      turns: st.turns,
      totalMs,
    },
    counts: st.counts,
  };
}
