import type { IncomingMessage, ServerResponse } from "node:http";
import { HttpError } from "../errors.js";
import { type CompletedResponse, ResponseAccumulator, type UpstreamEvent } from "../policy/chat.js";
import { AnswerTooLargeError, answerBytesOf, answerCapOf } from "../policy/limit-response.js";
import type { IntArrayJson } from "../policy/prompt-ids-json.js";
import type { ClientProtocol } from "../policy/upstream.js";
import { runSecrets } from "../redact/redactor.js";
import { AnthropicStreamEncoder, anthropicMessageBody } from "./anthropic-wire.js";
import {
  answeredCallOf,
  type CallRefusal,
  callFailure,
  failureCounts,
  refusalOf,
  responseIdOf,
  roundMs,
  turnRecordOf,
} from "./call-decisions.js";
import { type CallWatch, stopReason, watchCall } from "./call-watch.js";
import {
  type ClientRequest,
  parseClientRequest,
  parsesAfterForwarding,
  readBody,
  upstreamCall,
} from "./client-request.js";
import { errorBodyOf } from "./error-body.js";
import { OpenAiStreamEncoder, openAiCompletionBody } from "./openai-wire.js";
import type { ThreadRunClock } from "./thread-run-clock.js";
import type { TurnRecord, TurnStatus } from "./turn-log.js";
import type { Entry, GatewayTerminal } from "./types.js";

/** What a call needs of the gateway that serves it. */
export interface CallContext {
  readonly maxBody: number;
  /** Aborted when the gateway closes: every call is cut. */
  readonly signal: AbortSignal | undefined;
  /**
   * When set, every RUN_TIMED_EVERY-th call's own part is also timed against this thread's run
   * time (latency.gatewayRunMs): a timing reads the clock twice per streamed event.
   */
  readonly runClock: ThreadRunClock | undefined;
  endTrajectory(
    e: Entry,
    kind: GatewayTerminal["kind"],
    message: string,
    limit?: GatewayTerminal["limit"],
  ): void;
}

type SendError = (status: number, message: string, type: string) => void;

/** One model call as it is served: what the client asked, read and (maybe) parsed. */
interface CallState {
  readonly ctx: CallContext;
  readonly e: Entry;
  readonly protocol: ClientProtocol;
  readonly res: ServerResponse;
  readonly sendError: SendError;
  readonly seq: number;
  readonly startedAt: Date;
  /** performance.now() when the call arrived: the origin of its latencies. */
  readonly t0: number;
  /** performance.now() once its body was read (before: the client's sending pace, not the gateway's time). */
  readonly tBody: number;
  /** The thread's run clock, when this call is one of those timed against it. */
  readonly clock: ThreadRunClock | undefined;
  /** The thread's run time then (ms; NaN when not measured). */
  readonly runAtBody: number;
  /** The body is parsed only after it was forwarded (the upstream takes the client's JSON as is). */
  readonly deferParse: boolean;
  readonly body: Buffer;
  /** The parsed request, once parsed ({@link clientOf}). */
  parsed: ClientRequest | undefined;
}

/** A call on its way to the upstream and back: its abort, its answer so far, the client's stream. */
interface Relay {
  readonly st: CallState;
  readonly ac: AbortController;
  readonly acc: ResponseAccumulator;
  readonly responseId: string;
  /** Rejects the pending upstream read with the abort's reason (an upstream that ignores its signal cannot hold the call). */
  readonly onAbort: () => void;
  firstByteMs: number | null;
  /** Made at the first streamed event, when the request has been parsed. */
  encoder: AnthropicStreamEncoder | OpenAiStreamEncoder | undefined;
  /** The client's stream text gathered this tick; it leaves in one write at the end of the tick. */
  pending: string;
  flushQueued: boolean;
  rejectWaiting: ((reason: unknown) => void) | undefined;
  iterator: AsyncIterator<UpstreamEvent> | undefined;
  watch: CallWatch | undefined;
  /** Bytes of answer (text, reasoning, tool arguments) relayed so far, against answerCapOf. */
  answerBytes: number;
  /** ms spent awaiting the upstream's events (the rest of the call's time is the gateway's own). */
  upstreamWaitMs: number;
  /**
   * When the gateway began to wait on the first event: until then (parsing, arming the watchdogs)
   * it works while the upstream does, and that overlap is not a wait on the upstream.
   */
  awaitingSince: number | undefined;
  /** When the client had its whole answer (the turn's logging after that delays nobody). */
  answeredAt: number | undefined;
  /** The thread's run time (ms) spent while this call awaited the upstream (other calls' work), and then. */
  upstreamWaitRunMs: number;
  runAtAwait: number;
  runAtAnswer: number;
}

/**
 * Serves one model call of a registered trajectory: reads the body, refuses what the limits or a
 * bad body refuse, forwards the call to the trajectory's upstream, relays the answer in the protocol
 * the client spoke, and appends the turn to the trajectory's log.
 */
export async function serveCall(
  ctx: CallContext,
  e: Entry,
  protocol: ClientProtocol,
  req: IncomingMessage,
  res: ServerResponse,
  sendError: SendError,
): Promise<void> {
  const startedAt = new Date();
  const t0 = performance.now();
  const seq = ++e.seq;
  const deferParse = parsesAfterForwarding(protocol, e.upstream.forwardsClientJson);
  let body: Buffer;
  let parsed: ClientRequest | undefined;
  try {
    body = await readBody(req, ctx.maxBody);
    if (!deferParse) parsed = parseClientRequest(protocol, body);
  } catch (err) {
    refuseBadRequest(e, err, sendError);
    return;
  }
  const tBody = performance.now();
  const clock = ctx.runClock && ++runTimedCalls % RUN_TIMED_EVERY === 0 ? ctx.runClock : undefined;
  const runAtBody = clock?.now() ?? Number.NaN;
  const st: CallState = {
    ctx,
    e,
    protocol,
    res,
    sendError,
    seq,
    startedAt,
    t0,
    tBody,
    clock,
    runAtBody,
    deferParse,
    body,
    parsed,
  };
  const refusal = refusalOf(e, seq);
  if (refusal) await refuseCall(st, refusal);
  else await relayCall(st);
}

/**
 * One call in this many is timed against the thread's run clock (each timing costs two schedstat
 * reads per streamed event, tens of µs on a loaded machine: timing every call would add to the
 * very time it measures); over thousands of calls the sample's percentiles are the gateway's.
 */
export const RUN_TIMED_EVERY = 8;
let runTimedCalls = 0;

/** The parsed request; only read once parsing succeeded (every path parses before it reads). */
function clientOf(st: CallState): ClientRequest {
  st.parsed ??= parseClientRequest(st.protocol, st.body);
  return st.parsed;
}

/** Appends the call's turn line; a line that cannot be written ends the trajectory as infra_error. */
function recordTurn(
  st: CallState,
  status: TurnStatus,
  extra: Partial<TurnRecord>,
  promptIdsJson?: IntArrayJson,
): Promise<void> {
  const { e } = st;
  e.lastAnswered = answeredCallOf(status, extra.error, e.lastAnswered);
  if (!e.log) return Promise.resolve();
  const client = clientOf(st);
  const call = {
    trajectoryId: e.id,
    seq: st.seq,
    startedAt: st.startedAt,
    protocol: st.protocol,
    upstream: e.upstream.id,
    client,
    totalMs: roundMs(performance.now() - st.t0),
  };
  return e.log
    .append(turnRecordOf(call, status, extra), client.requestJson, promptIdsJson)
    .catch((err: unknown) => {
      // a turn that cannot be logged cannot be trained on: end the trajectory visibly
      // (the machine's fault, not the policy's: a full disk is retried once space is back)
      st.ctx.endTrajectory(e, "infra_error", `turn log ${e.log?.path} failed: ${(err as Error).message}`);
    });
}

/** Refuses a call of an ended trajectory or a spent budget (ending the trajectory on the budget). */
async function refuseCall(st: CallState, refusal: CallRefusal): Promise<void> {
  try {
    clientOf(st);
  } catch (err) {
    refuseBadRequest(st.e, err, st.sendError);
    return;
  }
  st.e.refused++;
  if (refusal.limit) st.ctx.endTrajectory(st.e, "limits_exceeded", refusal.message, refusal.limit);
  await recordTurn(st, "refused", { error: refusal.message });
  st.sendError(400, `flakegym gateway: ${refusal.message}`, "flakegym_limit_exceeded");
}

/** Forwards the call and relays its answer; a failure is counted, logged and answered. */
async function relayCall(st: CallState): Promise<void> {
  const r = openRelay(st);
  try {
    await forward(r);
  } catch (err) {
    await failCall(r, err);
  } finally {
    closeRelay(r);
  }
}

/** A call's relay, registered with its trajectory; a call of an ended trajectory or closing gateway never leaves. */
function openRelay(st: CallState): Relay {
  const ac = new AbortController();
  st.e.calls.add(ac);
  const stoppedBefore = stopReason(st.ctx, st.e);
  if (stoppedBefore) ac.abort(stoppedBefore);
  const r: Relay = {
    st,
    ac,
    acc: new ResponseAccumulator(),
    responseId: responseIdOf(st.protocol, st.e.id, st.seq),
    onAbort: () => r.rejectWaiting?.(ac.signal.reason),
    firstByteMs: null,
    encoder: undefined,
    pending: "",
    flushQueued: false,
    rejectWaiting: undefined,
    answerBytes: 0,
    upstreamWaitMs: 0,
    awaitingSince: undefined,
    answeredAt: undefined,
    upstreamWaitRunMs: 0,
    runAtAwait: Number.NaN,
    runAtAnswer: Number.NaN,
    iterator: undefined,
    watch: undefined,
  };
  ac.signal.addEventListener("abort", r.onAbort, { once: true });
  return r;
}

function closeRelay(r: Relay): void {
  r.ac.signal.removeEventListener("abort", r.onAbort);
  r.iterator?.return?.().catch(() => undefined);
  r.watch?.disarm();
  r.st.e.calls.delete(r.ac);
}

/** Sends the call upstream, relays its events, answers the client and counts the call ok. */
async function forward(r: Relay): Promise<void> {
  const { st, ac } = r;
  const call = upstreamCall(
    {
      trajectoryId: st.e.id,
      seq: st.seq,
      protocol: st.protocol,
      ...(st.deferParse || st.parsed?.requestJson ? { rawJson: st.body } : {}),
      ...(st.e.sampling ? { sampling: st.e.sampling } : {}),
      maxResponseBytes: st.e.limits.maxResponseBytes,
      ...(st.e.limits.deadlineAt !== undefined ? { deadlineAt: st.e.limits.deadlineAt } : {}),
    },
    () => clientOf(st),
  );
  const iterator = st.e.upstream.complete(call, ac.signal)[Symbol.asyncIterator]();
  r.iterator = iterator;
  // The upstream request leaves first (its bytes are written at the end of this round of I/O);
  // the watchdogs are armed, and a forwarded body parsed and checked, while it travels.
  const first = nextEvent(r, iterator);
  first.catch(() => undefined); // awaited below; a failure meanwhile is not unhandled
  await new Promise<void>((resolve) => setImmediate(resolve));
  const watch = watchCall(st.ctx, st.e, st.res, ac);
  r.watch = watch;
  if (st.deferParse) checkParsed(st, ac);
  const stream = clientOf(st).raw["stream"] === true;
  await relayEvents(r, iterator, watch, first, stream);
  if (ac.signal.aborted) throw ac.signal.reason;
  const response = r.acc.result();
  answerClient(r, response, stream);
  r.answeredAt = performance.now();
  r.runAtAnswer = st.clock?.now() ?? Number.NaN;
  const e = st.e;
  e.ok++;
  e.consecutiveFailures = 0;
  e.promptTokens += response.usage?.promptTokens ?? 0;
  e.completionTokens += response.usage?.completionTokens ?? 0;
  await recordTurn(st, "ok", { response, latency: latencyOf(r) }, r.acc.promptIdsJson());
}

/** Reads the upstream's events into the answer, streaming each to the client when it asked for a stream. */
async function relayEvents(
  r: Relay,
  iterator: AsyncIterator<UpstreamEvent>,
  watch: CallWatch,
  first: Promise<IteratorResult<UpstreamEvent>>,
  stream: boolean,
): Promise<void> {
  r.awaitingSince = performance.now();
  r.runAtAwait = r.st.clock?.now() ?? Number.NaN;
  let step = await first;
  const cap = answerCapOf(r.st.e.limits.maxResponseBytes);
  while (!step.done) {
    const ev = step.value;
    if (r.firstByteMs === null) r.firstByteMs = roundMs(performance.now() - r.st.t0);
    watch.touch();
    // the whole answer is capped, not only the raw body: a piece past the cap is never relayed
    r.answerBytes += answerBytesOf(ev);
    if (r.answerBytes > cap) throw new AnswerTooLargeError(cap);
    r.acc.add(ev);
    if (stream) {
      sendText(r, encoderOf(r).encode(ev));
      // a client that does not read holds up the upstream (TCP backpressure), not our memory
      if (r.st.res.writableNeedDrain) await drained(r);
    }
    step = await nextEvent(r, iterator);
  }
}

/**
 * A call's latencies: to the upstream's first event, to its end, and the gateway's own part: from
 * the body read to the client's whole answer, less the waits on the upstream (parsing, forwarding,
 * relaying each event, answering). With a run clock, that part once more, each piece capped by
 * what the thread ran meanwhile (ownRunMs).
 */
function latencyOf(r: Relay): TurnRecord["latency"] {
  const now = performance.now();
  const own = Math.max(0, (r.answeredAt ?? now) - r.st.tBody - r.upstreamWaitMs);
  const ran = r.runAtAnswer - r.st.runAtBody - r.upstreamWaitRunMs;
  return {
    firstByteMs: r.firstByteMs,
    totalMs: roundMs(now - r.st.t0),
    gatewayMs: roundMs(own),
    ...(Number.isFinite(ran) ? { gatewayRunMs: roundMs(ownRunMs(own, ran)) } : {}),
  };
}

/**
 * The gateway's own time of a call on a core of its own: its own wall time, at most what the
 * thread ran during it (its own work and other calls': an upper bound). The rest the thread spent
 * waiting for a core of this machine. Pure.
 */
export function ownRunMs(ownWallMs: number, ranMs: number): number {
  return Math.max(0, Math.min(ownWallMs, ranMs));
}

/** The upstream's next event, or the abort's reason as soon as the call is aborted; its wait is timed. */
function nextEvent(r: Relay, it: AsyncIterator<UpstreamEvent>): Promise<IteratorResult<UpstreamEvent>> {
  const t = performance.now();
  const clock = r.st.clock;
  // the first wait counts from awaitingSince (relayEvents reads the clock then)
  const run0 = clock && r.awaitingSince !== undefined ? clock.now() : undefined;
  const timed = () => {
    const now = performance.now();
    r.upstreamWaitMs += Math.max(0, now - Math.max(t, r.awaitingSince ?? now));
    const from = run0 ?? (r.awaitingSince !== undefined ? r.runAtAwait : undefined);
    if (clock && from !== undefined) r.upstreamWaitRunMs += clock.now() - from;
  };
  return new Promise<IteratorResult<UpstreamEvent>>((resolve, reject) => {
    if (r.ac.signal.aborted) reject(r.ac.signal.reason);
    else {
      r.rejectWaiting = reject;
      it.next().then(resolve, reject);
    }
  }).finally(timed);
}

/** Ends the client's stream, or sends the whole answer as one JSON body. */
function answerClient(r: Relay, response: CompletedResponse, stream: boolean): void {
  const { st } = r;
  if (stream) {
    sendText(r, encoderOf(r).end());
    const text = r.pending;
    r.pending = "";
    st.res.end(text);
    return;
  }
  const model = clientOf(st).request.model;
  const body =
    st.protocol === "anthropic"
      ? anthropicMessageBody(r.responseId, model, response)
      : openAiCompletionBody(r.responseId, model, response);
  st.res.writeHead(200, { "content-type": "application/json" });
  st.res.end(runSecrets.text(JSON.stringify(body)));
}

/** Counts, logs and answers a call that failed; a bad forwarded body is refused as a bad request. */
async function failCall(r: Relay, err: unknown): Promise<void> {
  // what the client was sent before the failure goes out before the error event
  flushPending(r);
  const { st, ac } = r;
  const reason = ac.signal.aborted ? ac.signal.reason : err;
  const partial = r.acc.result();
  const latency = latencyOf(r);
  if (reason instanceof HttpError) {
    refuseBadRequest(st.e, reason, st.sendError);
    return;
  }
  const f = callFailure(reason, ac.signal.aborted, st.e, st.seq);
  const counted = failureCounts(f.counts, st.e);
  st.e.failed = counted.failed;
  st.e.consecutiveFailures = counted.consecutiveFailures;
  const end = f.ends?.(st.e.consecutiveFailures);
  if (end) st.ctx.endTrajectory(st.e, end.kind, end.message);
  await recordTurn(st, f.turn, { error: f.message, response: partial, latency }, r.acc.promptIdsJson());
  failResponse(st.res, st.protocol, f.httpStatus, `flakegym gateway: ${f.message}`, f.type);
}

const STREAM_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

/**
 * Queues text for the client's stream: the events of one upstream read arrive within one tick;
 * they are gathered and leave in one write at the end of that tick (process.nextTick), never later.
 */
function sendText(r: Relay, text: string): void {
  const res = r.st.res;
  if (text.length === 0 || res.destroyed) return;
  if (!res.headersSent) res.writeHead(200, STREAM_HEADERS);
  r.pending += runSecrets.text(text);
  if (!r.flushQueued) {
    r.flushQueued = true;
    process.nextTick(flushPending, r);
  }
}

function flushPending(r: Relay): void {
  r.flushQueued = false;
  const res = r.st.res;
  if (r.pending.length === 0 || res.writableEnded || res.destroyed) return;
  const text = r.pending;
  r.pending = "";
  res.write(text);
}

function encoderOf(r: Relay): AnthropicStreamEncoder | OpenAiStreamEncoder {
  if (!r.encoder) {
    const client = clientOf(r.st);
    r.encoder = streamEncoder(r.st.protocol, r.responseId, client.raw, client.request.model);
  }
  return r.encoder;
}

/** Resolves when the client's socket drains, closes, or the call is aborted. */
function drained(r: Relay): Promise<void> {
  const { res } = r.st;
  const signal = r.ac.signal;
  return new Promise<void>((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      signal.removeEventListener("abort", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Answers a failed call: a JSON error, or an error event when the stream had begun. */
function failResponse(
  res: ServerResponse,
  protocol: ClientProtocol,
  status: number,
  message: string,
  type: string,
): void {
  if (res.destroyed || res.writableEnded) return;
  const msg = runSecrets.text(message);
  const body = errorBodyOf(protocol, msg, type);
  if (!res.headersSent) {
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(body));
    return;
  }
  const text =
    protocol === "anthropic"
      ? `event: error\ndata: ${JSON.stringify(body)}\n\n`
      : `data: ${JSON.stringify(body)}\n\n`;
  res.end(text);
}

/** Refuses a call whose body is bad (not JSON, wrong fields, too large): counted, not recorded as a turn. */
function refuseBadRequest(
  e: { refused: number },
  err: unknown,
  sendError: (status: number, message: string, type: string) => void,
): void {
  e.refused++;
  if (err instanceof HttpError)
    sendError(err.status, `flakegym gateway: ${err.message}`, err.type ?? "invalid_request_error");
  else sendError(400, `flakegym gateway: bad request: ${(err as Error).message}`, "invalid_request_error");
}

/** Parses and checks a forwarded call's body; a bad body aborts the call with its {@link HttpError}. */
function checkParsed(st: CallState, ac: AbortController): void {
  try {
    clientOf(st);
  } catch (err) {
    ac.abort(err);
  }
}

function streamEncoder(
  protocol: ClientProtocol,
  responseId: string,
  raw: Readonly<Record<string, unknown>>,
  model: string,
): AnthropicStreamEncoder | OpenAiStreamEncoder {
  if (protocol === "anthropic") return new AnthropicStreamEncoder(responseId, model);
  const includeUsage =
    (raw["stream_options"] as { include_usage?: unknown } | undefined)?.include_usage === true;
  return new OpenAiStreamEncoder(responseId, model, includeUsage);
}
