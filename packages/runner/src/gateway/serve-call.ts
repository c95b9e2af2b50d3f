import type { IncomingMessage, ServerResponse } from "node:http";
import { ResponseAccumulator, type UpstreamEvent } from "../policy/chat.js";
import type { IntArrayJson } from "../policy/prompt-ids-json.js";
import { type ClientProtocol, UpstreamError } from "../policy/upstream.js";
import { runSecrets } from "../redact/redactor.js";
import { AnthropicStreamEncoder, anthropicErrorBody, anthropicMessageBody } from "./anthropic-wire.js";
import {
  type ClientRequest,
  HttpError,
  parseClientRequest,
  parsesAfterForwarding,
  upstreamCall,
} from "./client-request.js";
import { OpenAiStreamEncoder, openAiCompletionBody, openAiErrorBody } from "./openai-wire.js";
import type { TurnRecord, TurnStatus } from "./turn-log.js";
import type { Entry, GatewayTerminal } from "./types.js";

/** What a call needs of the gateway that serves it. */
export interface CallContext {
  readonly maxBody: number;
  /** Aborted when the gateway closes: every call is cut. */
  readonly signal: AbortSignal | undefined;
  endTrajectory(
    e: Entry,
    kind: GatewayTerminal["kind"],
    message: string,
    limit?: GatewayTerminal["limit"],
  ): void;
}

export class WatchdogTimeout extends Error {
  constructor(
    readonly which: "silence" | "total",
    ms: number,
  ) {
    super(
      which === "silence"
        ? `upstream sent no event for ${ms} ms (silenceTimeoutMs; bytes that never complete an event do not count)`
        : `upstream call took longer than ${ms} ms (totalTimeoutMs)`,
    );
  }
}

/**
 * The request body, whole. Plain listeners, not an async iterator: a body over the limit is refused
 * (413) while the rest of it flows on unread, so the answer reaches the client; an iterator's early
 * exit destroyed the request, and the answer with it.
 */
function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err: Error | undefined) => {
      req.off("data", onData).off("end", onEnd).off("error", settle).off("close", onClose);
      if (err) reject(err);
      else resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= max) chunks.push(chunk);
      else settle(new HttpError(413, `request body larger than ${max} bytes`, "invalid_request_error"));
    };
    const onEnd = () => settle(undefined);
    const onClose = () => settle(new Error("the client closed the connection before its request body ended"));
    req.on("data", onData).on("end", onEnd).on("error", settle).on("close", onClose);
  });
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
  sendError: (status: number, message: string, type: string) => void,
): Promise<void> {
  const startedAt = new Date();
  const t0 = performance.now();
  const seq = ++e.seq;
  let body: Buffer;
  let parsed: ClientRequest | undefined;
  const deferParse = parsesAfterForwarding(protocol, e.upstream.forwardsClientJson);
  try {
    body = await readBody(req, ctx.maxBody);
    if (!deferParse) parsed = parseClientRequest(protocol, body);
  } catch (err) {
    refuseBadRequest(e, err, sendError);
    return;
  }
  /** The parsed request; only read once parsing succeeded (every path below parses first). */
  const client = () => {
    parsed ??= parseClientRequest(protocol, body);
    return parsed;
  };
  const record = (
    status: TurnStatus,
    extra: Partial<TurnRecord>,
    promptIdsJson?: IntArrayJson,
  ): Promise<void> => {
    if (!e.log) return Promise.resolve();
    const rec: TurnRecord = {
      v: 1,
      trajectoryId: e.id,
      seq,
      startedAt: startedAt.toISOString(),
      protocol,
      stream: client().raw["stream"] === true,
      upstream: e.upstream.id,
      status,
      request: client().request,
      latency: { firstByteMs: null, totalMs: round(performance.now() - t0) },
      ...extra,
    };
    return e.log.append(rec, client().requestJson, promptIdsJson).catch((err: unknown) => {
      // a turn that cannot be logged cannot be trained on: end the trajectory visibly
      // (the machine's fault, not the policy's: a full disk is retried once space is back)
      ctx.endTrajectory(e, "infra_error", `turn log ${e.log?.path} failed: ${(err as Error).message}`);
    });
  };

  // refusals: an ended trajectory, or a spent budget
  const overRequests = e.limits.maxRequests !== undefined && seq > e.limits.maxRequests;
  const refusal = e.terminal
    ? `trajectory '${e.id}' was ended by the gateway (${e.terminal.kind}: ${e.terminal.message})`
    : overRequests
      ? `trajectory '${e.id}' exceeded maxRequests=${e.limits.maxRequests} (call ${seq} refused)`
      : e.limits.maxCompletionTokens !== undefined && e.completionTokens >= e.limits.maxCompletionTokens
        ? `trajectory '${e.id}' spent its maxCompletionTokens=${e.limits.maxCompletionTokens} (${e.completionTokens} sampled; call ${seq} refused)`
        : undefined;
  if (refusal) {
    try {
      client();
    } catch (err) {
      refuseBadRequest(e, err, sendError);
      return;
    }
    e.refused++;
    if (!e.terminal)
      ctx.endTrajectory(e, "limits_exceeded", refusal, overRequests ? "model_requests" : "completion_tokens");
    await record("refused", { error: refusal });
    sendError(400, `flakegym gateway: ${refusal}`, "flakegym_limit_exceeded");
    return;
  }

  const ac = new AbortController();
  e.calls.add(ac);
  // a call of a trajectory that has ended, or of a closing gateway, never leaves
  const stoppedBefore = stopReason(ctx, e);
  if (stoppedBefore) ac.abort(stoppedBefore);
  let watch: CallWatch | undefined;
  const acc = new ResponseAccumulator();
  let firstByteMs: number | null = null;
  const responseId = `${protocol === "anthropic" ? "msg" : "chatcmpl"}-${e.id}-${seq}`;
  // made at the first event, when the request has been parsed
  let encoder: AnthropicStreamEncoder | OpenAiStreamEncoder | undefined;
  const encoderOf = () => {
    encoder ??= streamEncoder(protocol, responseId, client().raw, client().request.model);
    return encoder;
  };
  // The client's stream: the events of one upstream read arrive within one tick; they are
  // gathered and leave in one write at the end of that tick (process.nextTick), never later.
  let pending = "";
  let flushQueued = false;
  const flush = () => {
    flushQueued = false;
    if (pending.length === 0 || res.writableEnded || res.destroyed) return;
    const text = pending;
    pending = "";
    res.write(text);
  };
  const send = (text: string) => {
    if (text.length === 0 || res.destroyed) return;
    if (!res.headersSent) {
      res.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-cache",
        connection: "keep-alive",
        "x-accel-buffering": "no",
      });
    }
    pending += runSecrets.text(text);
    if (!flushQueued) {
      flushQueued = true;
      process.nextTick(flush);
    }
  };
  const drained = () =>
    new Promise<void>((resolve) => {
      const done = () => {
        res.off("drain", done);
        res.off("close", done);
        ac.signal.removeEventListener("abort", done);
        resolve();
      };
      res.on("drain", done);
      res.on("close", done);
      ac.signal.addEventListener("abort", done, { once: true });
    });
  // the next upstream event, or the abort reason as soon as the call is aborted (an upstream
  // that ignores its signal cannot hold the call)
  let rejectWaiting: ((reason: unknown) => void) | undefined;
  const onAbort = () => rejectWaiting?.(ac.signal.reason);
  ac.signal.addEventListener("abort", onAbort, { once: true });
  const next = (it: AsyncIterator<UpstreamEvent>) =>
    new Promise<IteratorResult<UpstreamEvent>>((resolve, reject) => {
      if (ac.signal.aborted) reject(ac.signal.reason);
      else {
        rejectWaiting = reject;
        it.next().then(resolve, reject);
      }
    });
  let iterator: AsyncIterator<UpstreamEvent> | undefined;
  try {
    const call = upstreamCall(
      {
        trajectoryId: e.id,
        seq,
        protocol,
        ...(deferParse || parsed?.requestJson ? { rawJson: body } : {}),
        ...(e.sampling ? { sampling: e.sampling } : {}),
        maxResponseBytes: e.limits.maxResponseBytes,
      },
      client,
    );
    iterator = e.upstream.complete(call, ac.signal)[Symbol.asyncIterator]();
    // The upstream request leaves first (its bytes are written at the end of this round of I/O);
    // the watchdogs are armed, and a forwarded body parsed and checked, while it travels.
    let first: Promise<IteratorResult<UpstreamEvent>> | undefined = next(iterator);
    first.catch(() => undefined); // awaited below; a failure meanwhile is not unhandled
    await new Promise<void>((resolve) => setImmediate(resolve));
    watch = watchCall(ctx, e, res, ac);
    if (deferParse) checkParsed(client, ac);
    const stream = client().raw["stream"] === true;
    for (;;) {
      const step = await (first ?? next(iterator));
      first = undefined;
      if (step.done) break;
      const ev = step.value;
      if (firstByteMs === null) firstByteMs = round(performance.now() - t0);
      watch.touch();
      acc.add(ev);
      if (stream) {
        send(encoderOf().encode(ev));
        // a client that does not read holds up the upstream (TCP backpressure), not our memory
        if (res.writableNeedDrain) await drained();
      }
    }
    if (ac.signal.aborted) throw ac.signal.reason;
    const response = acc.result();
    if (stream) {
      send(encoderOf().end());
      const text = pending;
      pending = "";
      res.end(text);
    } else {
      const body =
        protocol === "anthropic"
          ? anthropicMessageBody(responseId, client().request.model, response)
          : openAiCompletionBody(responseId, client().request.model, response);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(runSecrets.text(JSON.stringify(body)));
    }
    e.ok++;
    e.consecutiveFailures = 0;
    e.promptTokens += response.usage?.promptTokens ?? 0;
    e.completionTokens += response.usage?.completionTokens ?? 0;
    await record(
      "ok",
      { response, latency: { firstByteMs, totalMs: round(performance.now() - t0) } },
      acc.promptIdsJson(),
    );
  } catch (err) {
    // what the client was sent before the failure goes out before the error event
    flush();
    const reason = ac.signal.aborted ? ac.signal.reason : err;
    const partial = acc.result();
    const latency = { firstByteMs, totalMs: round(performance.now() - t0) };
    if (reason instanceof HttpError) {
      refuseBadRequest(e, reason, sendError);
      return;
    }
    const f = callFailure(reason, ac.signal.aborted, e, seq);
    if (f.counts) {
      e.failed++;
      if (f.counts === "in_a_row") e.consecutiveFailures++;
    }
    const end = f.ends?.(e.consecutiveFailures);
    if (end) ctx.endTrajectory(e, end.kind, end.message);
    await record(f.turn, { error: f.message, response: partial, latency }, acc.promptIdsJson());
    failResponse(res, protocol, f.httpStatus, `flakegym gateway: ${f.message}`, f.type);
  } finally {
    ac.signal.removeEventListener("abort", onAbort);
    iterator?.return?.().catch(() => undefined);
    watch?.disarm();
    e.calls.delete(ac);
  }
}

const round = (ms: number) => Math.round(ms * 100) / 100;

/** How a call that failed is counted, logged and answered, and whether it ends its trajectory. */
export interface CallFailure {
  readonly turn: Exclude<TurnStatus, "ok" | "refused">;
  readonly httpStatus: number;
  readonly type: "timeout_error" | "upstream_error" | "aborted";
  readonly message: string;
  /** Counted as failed; `in_a_row` also towards maxConsecutiveFailures. */
  readonly counts: false | "failed" | "in_a_row";
  /** The trajectory's end, given its failures in a row once this one is counted. */
  readonly ends?: (inARow: number) => { kind: "timeout" | "policy_error"; message: string } | undefined;
}

/**
 * Classifies a call's failure (pure): a watchdog ends the trajectory as timeout; an upstream error
 * (or a fault of the gateway's own) is the policy's, and ends it when terminal or after
 * maxConsecutiveFailures in a row; an abort (client gone, trajectory ended or unregistered, gateway
 * closing) is not counted.
 */
export function callFailure(
  reason: unknown,
  aborted: boolean,
  e: Pick<Entry, "id" | "limits">,
  seq: number,
): CallFailure {
  const max = e.limits.maxConsecutiveFailures;
  const at = `trajectory '${e.id}' call ${seq}`;
  if (reason instanceof WatchdogTimeout) {
    const message = `${at}: ${reason.message}`;
    const ends = () => ({ kind: "timeout" as const, message });
    return { turn: "timeout", httpStatus: 504, type: "timeout_error", message, counts: "failed", ends };
  }
  if (reason instanceof UpstreamError) {
    const message = `${at}: ${reason.message}`;
    const httpStatus = reason.status >= 400 && reason.status < 600 ? reason.status : 502;
    const ends = (inARow: number) =>
      reason.terminal
        ? { kind: "policy_error" as const, message }
        : inARow >= max
          ? {
              kind: "policy_error" as const,
              message: `${inARow} upstream failures in a row; last: ${message}`,
            }
          : undefined;
    return { turn: "upstream_error", httpStatus, type: "upstream_error", message, counts: "in_a_row", ends };
  }
  if (aborted) {
    const why =
      reason instanceof Error ? reason.message : String((reason as GatewayTerminal)?.message ?? reason);
    return {
      turn: "aborted",
      httpStatus: 503,
      type: "aborted",
      message: `call ${seq} aborted: ${why}`,
      counts: false,
    };
  }
  const message = `${at}: gateway fault: ${(reason as Error)?.message ?? String(reason)}`;
  const ends = (inARow: number) => (inARow >= max ? { kind: "policy_error" as const, message } : undefined);
  return {
    turn: "upstream_error",
    httpStatus: 502,
    type: "upstream_error",
    message,
    counts: "in_a_row",
    ends,
  };
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
  const body = protocol === "anthropic" ? anthropicErrorBody(msg, type) : openAiErrorBody(msg, type);
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
  if (err instanceof HttpError) sendError(err.status, `flakegym gateway: ${err.message}`, err.type);
  else sendError(400, `flakegym gateway: bad request: ${(err as Error).message}`, "invalid_request_error");
}

/** Parses and checks a forwarded call's body; a bad body aborts the call with its {@link HttpError}. */
function checkParsed(client: () => ClientRequest, ac: AbortController): void {
  try {
    client();
  } catch (err) {
    ac.abort(err);
  }
}

/** Why a call must stop before it starts, if it must: its trajectory ended, or the gateway is closing. */
export function stopReason(ctx: Pick<CallContext, "signal">, e: Pick<Entry, "ended">): unknown {
  if (e.ended.signal.aborted) return e.ended.signal.reason;
  if (ctx.signal?.aborted) return new Error("gateway closing");
  return undefined;
}

/** What ends a call from outside while it runs; `touch` on every upstream event. */
export interface CallWatch {
  touch(): void;
  disarm(): void;
}

/**
 * Arms what ends a call from outside: the client leaving, its trajectory ending, the gateway
 * closing, and the silence and total watchdogs. What happened before it was armed counts too.
 */
export function watchCall(ctx: CallContext, e: Entry, res: ServerResponse, ac: AbortController): CallWatch {
  const onClose = () => {
    if (!res.writableFinished) ac.abort(new Error("client closed the connection"));
  };
  const onStop = () => {
    const reason = stopReason(ctx, e);
    if (reason) ac.abort(reason);
  };
  res.on("close", onClose);
  e.ended.signal.addEventListener("abort", onStop, { once: true });
  ctx.signal?.addEventListener("abort", onStop, { once: true });
  if (res.destroyed) onClose();
  onStop();
  // a stream that stops mid-way is as dead as one that never starts. One lazy timer: an event only
  // stamps the time; the timer, when it fires, sleeps again for what is left of the window.
  const { silenceTimeoutMs, totalTimeoutMs } = e.limits;
  let lastEventAt = performance.now();
  const checkSilence = () => {
    const left = silenceTimeoutMs - (performance.now() - lastEventAt);
    if (left <= 0) ac.abort(new WatchdogTimeout("silence", silenceTimeoutMs));
    else silenceTimer = setTimeout(checkSilence, left);
  };
  let silenceTimer = setTimeout(checkSilence, silenceTimeoutMs);
  const totalTimer = setTimeout(() => ac.abort(new WatchdogTimeout("total", totalTimeoutMs)), totalTimeoutMs);
  return {
    touch: () => {
      lastEventAt = performance.now();
    },
    disarm: () => {
      clearTimeout(silenceTimer);
      clearTimeout(totalTimer);
      res.off("close", onClose);
      e.ended.signal.removeEventListener("abort", onStop);
      ctx.signal?.removeEventListener("abort", onStop);
    },
  };
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
