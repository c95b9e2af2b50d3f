import type { OutcomeKind } from "@flakegym/cline-vendor";
import type { Worker } from "../types.js";
import { booted, schedule } from "./pool-boot.js";
import { changed, type PoolCore, type PoolEntry, type PoolKey } from "./pool-state.js";
import { decideRelease, REUSE_DEFAULT, type ResetReport, resetVerdict } from "./reuse.js";

/** Whether a worker that has served `served` trajectories may come back for another (`--reuse`). */
export function mayReturn(p: PoolCore, e: PoolEntry, served: number): boolean {
  return typeof e.w.reset === "function" && served < (p.limits.reuse ?? REUSE_DEFAULT);
}

/** A reset that threw, as a report the verdict refuses. */
function failedReset(err: unknown): ResetReport {
  return {
    strayPids: [],
    keptGone: [],
    dirtyPaths: [],
    slotMounts: 0,
    stateDiff: [],
    failure: (err as Error).message,
  };
}

/** Resets `e`'s worker and gives it back to its key's idle workers; stops it on any doubt. */
async function resetAndRequeue(
  p: PoolCore,
  k: PoolKey,
  e: PoolEntry,
  w: Worker,
  served: number,
): Promise<void> {
  const report = await e.w.reset!(p.life.signal).catch(failedReset);
  const v = resetVerdict(report);
  if (report.coreGcMissed)
    p.o.onNote?.(`worker ${w.id}: the core did not collect its garbage: ${report.coreGcMissed}`);
  if (!v.clean || p.closed) {
    p.counts.resetRetired++;
    if (!v.clean) p.o.onNote?.(`worker ${w.id} retired after its reset: ${v.why}`);
    await w.stop().catch(() => {});
    return;
  }
  booted(p, k, { w: e.w, readyAt: Date.now(), served });
}

/**
 * The worker a pooled trajectory is handed (counted as serving by the caller when it may come
 * back: `returning`), with `release`: at its end the pure decision
 * (reuse.ts `decideRelease`) says reset or retire; a reset worker goes back to its key's idle
 * workers, anything else is stopped. `stop()` stays a plain stop (owners that cannot say how the
 * trajectory ended).
 */
export function releasable(
  p: PoolCore,
  k: PoolKey,
  t: { readonly e: PoolEntry; readonly w: Worker; readonly served: number; readonly returning: boolean },
): Worker {
  const { e, w, served, returning: counted } = t;
  let ended = false;
  void w.exited?.then(() => {
    ended = true;
  });
  let released: Promise<void> | undefined;
  const settle = () => {
    if (counted) k.serving--;
  };
  const release = (outcome: OutcomeKind | undefined): Promise<void> => {
    released ??= (async () => {
      const d = decideRelease({
        backend: p.inner.kind,
        resettable: typeof e.w.reset === "function",
        served,
        reuse: p.limits.reuse ?? REUSE_DEFAULT,
        outcome,
        workerEnded: ended,
        poolClosed: p.closed,
      });
      try {
        if (d.action === "retire") {
          if (counted) p.counts.resetRetired++;
          await w.stop().catch(() => {});
        } else await resetAndRequeue(p, k, e, w, served);
      } finally {
        settle();
        changed(p);
        schedule(p);
      }
    })();
    return released;
  };
  const stop = async () => {
    if (!released)
      released = (async () => {
        settle();
        await w.stop();
        schedule(p);
      })();
    await released;
  };
  return { ...w, release, stop };
}
