import { describe, expect, it } from "vitest";
import { createSemaphore } from "../../src/workers/semaphore.js";

describe("createSemaphore", () => {
  it("never runs more than its size at once, and serves waiters in order", async () => {
    const sem = createSemaphore(2);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        sem.with(undefined, async () => {
          running++;
          peak = Math.max(peak, running);
          order.push(i);
          await new Promise((r) => setTimeout(r, 5));
          running--;
        }),
      ),
    );
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(sem.free).toBe(2);
  });

  it("a waiter aborted while queued leaves the queue and rejects with the reason", async () => {
    const sem = createSemaphore(1);
    await sem.acquire();
    const ac = new AbortController();
    const waiting = sem.acquire(ac.signal);
    expect(sem.waiting).toBe(1);
    ac.abort(new Error("ctrl-c"));
    await expect(waiting).rejects.toThrow("ctrl-c");
    expect(sem.waiting).toBe(0);
    sem.release();
    expect(sem.free).toBe(1);
  });

  it("a `first` waiter goes ahead of ordinary waiters, FIFO among the first", async () => {
    const sem = createSemaphore(1);
    await sem.acquire();
    const order: string[] = [];
    const take = (name: string, first: boolean) =>
      sem.acquire(undefined, { first }).then(() => {
        order.push(name);
        sem.release();
      });
    const all = Promise.all([
      take("agent-1", false),
      take("score-1", true),
      take("agent-2", false),
      take("score-2", true),
    ]);
    expect(sem.waiting).toBe(4);
    sem.release();
    await all;
    expect(order).toEqual(["score-1", "score-2", "agent-1", "agent-2"]);
    expect(sem.free).toBe(1);
  });
});
