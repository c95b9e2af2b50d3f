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
  e: Pick<Entry, "ended" | "limits">,
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
