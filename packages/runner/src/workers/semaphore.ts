/**
 * A FIFO counting semaphore: the global `--concurrency` cap on workers across tasks. A `first`
 * waiter goes ahead of ordinary ones (still FIFO among the `first`), so work that finishes a
 * trajectory (its scoring) is not queued behind whole agent runs that start new ones.
 */
export function createSemaphore(size: number) {
  let free = size;
  const waiting: Array<{
    first: boolean;
    resolve: () => void;
    reject: (e: unknown) => void;
    signal?: AbortSignal;
    onAbort: () => void;
  }> = [];
  const release = () => {
    const next = waiting.shift();
    if (next) {
      next.signal?.removeEventListener("abort", next.onAbort);
      next.resolve();
    } else {
      free++;
    }
  };
  return {
    /** Waits for a slot (FIFO); rejects with the signal's reason when aborted while waiting. */
    acquire(signal?: AbortSignal, opts: { first?: boolean } = {}): Promise<void> {
      signal?.throwIfAborted();
      if (free > 0) {
        free--;
        return Promise.resolve();
      }
      return new Promise<void>((resolve, reject) => {
        const entry = {
          first: opts.first === true,
          resolve,
          reject,
          ...(signal ? { signal } : {}),
          onAbort: () => {
            const i = waiting.indexOf(entry);
            if (i !== -1) waiting.splice(i, 1);
            reject(signal?.reason);
          },
        };
        signal?.addEventListener("abort", entry.onAbort, { once: true });
        if (entry.first) {
          const after = waiting.findIndex((w) => !w.first);
          waiting.splice(after === -1 ? waiting.length : after, 0, entry);
        } else waiting.push(entry);
      });
    },
    release,
    /** Runs `fn` holding one slot. */
    async with<T>(signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
      await this.acquire(signal);
      try {
        return await fn();
      } finally {
        release();
      }
    },
    get free() {
      return free;
    },
    get waiting() {
      return waiting.length;
    },
  };
}
export type Semaphore = ReturnType<typeof createSemaphore>;
