import type { ServerResponse } from "node:http";
import { WatchdogTimeout } from "./call-decisions.js";
import type { Entry } from "./types.js";

/** The gateway's own signal, aborted when it closes: every call is cut. */
export interface GatewaySignal {
  readonly signal: AbortSignal | undefined;
}

/** Why a call must stop before it starts, if it must: its trajectory ended, or the gateway is closing. */
export function stopReason(ctx: GatewaySignal, e: Pick<Entry, "ended">): unknown {
  if (e.ended.signal.aborted) return e.ended.signal.reason;
  if (ctx.signal?.aborted) return new Error("gateway closing");
  return undefined;
}

/**
 * How far past its due time a timer fired, when that is past a generous bound (1 s): this process
 * was held up (stopped, frozen, starved) and the time is nobody's — not the model server's silence,
 * not the call's length. 0 when on time. Pure.
 */
export function timerStallMs(dueAt: number, now: number): number {
  const late = now - dueAt;
  return late > 1000 ? late : 0;
}

/** An epoch-ms instant on the monotonic clock, read at the same moment as `epochNow`/`monoNow`. Pure. */
export function monotonicOf(
  epochMs: number | undefined,
  epochNow: number,
  monoNow: number,
): number | undefined {
  return epochMs === undefined ? undefined : monoNow + (epochMs - epochNow);
}

/**
 * The trajectory's deadline watchdog of one call: a call still answering when the trajectory's time
 * ends (a model server that streams a little now and then, forever) is cut then, as the model
 * server's — otherwise the worker's wall clock would end it as the agent's timeout.
 */
function armDeadline(deadlineMono: number | undefined, ac: AbortController): () => void {
  if (deadlineMono === undefined) return () => undefined;
  const start = performance.now();
  const timer = setTimeout(
    () => ac.abort(new WatchdogTimeout("deadline", Math.round(performance.now() - start))),
    Math.max(0, deadlineMono - start),
  );
  return () => clearTimeout(timer);
}

/**
 * The silence and total watchdogs of one call. A stream that stops mid-way is as dead as one that
 * never starts. One lazy timer each: an event only stamps the time; the timer, when it fires, sleeps
 * again for what is left of the window. A timer that fires far past its time means this process was
 * held up (SIGSTOP of the runner, a frozen VM): that time is nobody's, so the silence window starts
 * anew and the total one moves on by it (at most by its own length in all).
 */
function armWatchdogs(
  limits: Pick<Entry["limits"], "silenceTimeoutMs" | "totalTimeoutMs">,
  ac: AbortController,
): { touch(): void; clear(): void } {
  const { silenceTimeoutMs, totalTimeoutMs } = limits;
  let lastEventAt = performance.now();
  let silenceDue = lastEventAt + silenceTimeoutMs;
  const checkSilence = () => {
    const now = performance.now();
    // when the stop began is unknown (the timer only shows it ended late): the window starts anew
    if (timerStallMs(silenceDue, now) > 0) lastEventAt = now;
    const left = silenceTimeoutMs - (now - lastEventAt);
    if (left <= 0) ac.abort(new WatchdogTimeout("silence", silenceTimeoutMs));
    else {
      silenceDue = now + left;
      silenceTimer = setTimeout(checkSilence, left);
    }
  };
  let silenceTimer = setTimeout(checkSilence, silenceTimeoutMs);
  let totalDue = performance.now() + totalTimeoutMs;
  let credited = 0;
  const checkTotal = () => {
    const now = performance.now();
    const stall = Math.min(timerStallMs(totalDue, now), totalTimeoutMs - credited);
    if (stall <= 0) return ac.abort(new WatchdogTimeout("total", totalTimeoutMs));
    credited += stall;
    totalDue = now + stall;
    totalTimer = setTimeout(checkTotal, stall);
  };
  let totalTimer = setTimeout(checkTotal, totalTimeoutMs);
  return {
    touch: () => {
      lastEventAt = performance.now();
    },
    clear: () => {
      clearTimeout(silenceTimer);
      clearTimeout(totalTimer);
    },
  };
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
export function watchCall(
  ctx: GatewaySignal,
  e: Pick<Entry, "ended" | "limits"> & Partial<Pick<Entry, "deadlineMono">>,
  res: ServerResponse,
  ac: AbortController,
): CallWatch {
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
  const dogs = armWatchdogs(e.limits, ac);
  const clearDeadline = armDeadline(e.deadlineMono, ac);
  return {
    touch: dogs.touch,
    disarm: () => {
      dogs.clear();
      clearDeadline();
      res.off("close", onClose);
      e.ended.signal.removeEventListener("abort", onStop);
      ctx.signal?.removeEventListener("abort", onStop);
    },
  };
}
