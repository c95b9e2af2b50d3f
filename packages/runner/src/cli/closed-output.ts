import type { Writable } from "node:stream";

/**
 * The CLI's stdout and stderr may close under it (`flakegym rollout … 2>&1 | head -3`): a write
 * then fails with EPIPE, emitted as an `error` event that, unheard, kills the process mid-run —
 * no summary, a stale run.lock, mounts, cgroups and scratch left behind. What the terminal shows
 * is never what the run keeps (that is on disk), so a failed write to them is dropped and the
 * run goes on to its end. Every later write is dropped too.
 */

/**
 * Makes `stream`'s failures harmless (EPIPE, ERR_STREAM_DESTROYED, …): its error events are heard,
 * so none reaches the process as an uncaught exception; a destroyed stream drops later writes
 * itself. `onFirst` hears the first failure. Returns the undo.
 */
export function surviveClosedOutput(stream: Writable, onFirst?: (err: unknown) => void): () => void {
  let broken = false;
  const onError = (err: unknown) => {
    if (!broken) onFirst?.(err);
    broken = true;
  };
  stream.on("error", onError);
  return () => {
    stream.off("error", onError);
  };
}
