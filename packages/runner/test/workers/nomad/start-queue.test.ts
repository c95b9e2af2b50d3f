import { describe, expect, it } from "vitest";
import { NomadBackendOptions } from "../../../src/workers/nomad/options.js";
import { createStartQueue, startBoundMs, startQueueBoundMs } from "../../../src/workers/nomad/start-queue.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the Nomad backend's start queue", () => {
  it("bounds a queued start's wait by the rounds of starts ahead of it", () => {
    expect(startQueueBoundMs(0, 32, 1_000)).toBe(1_000);
    expect(startQueueBoundMs(31, 32, 1_000)).toBe(1_000);
    expect(startQueueBoundMs(32, 32, 1_000)).toBe(2_000);
    expect(startQueueBoundMs(968, 32, 1_000)).toBe(31_000);
    expect(startQueueBoundMs(5, 0, 1_000)).toBe(6_000);
    const o = NomadBackendOptions.parse({ driver: { driver: "docker" } });
    expect(o.maxConcurrentStarts).toBe(32);
    // registration (≤ 60 s) + the start + three cleanup calls
    expect(startBoundMs(o)).toBe(60_000 + o.startTimeoutMs + 3 * o.cleanupTimeoutMs);
  });

  it("runs at most `slots` starts at once, first come first served", async () => {
    const q = createStartQueue(2, 10_000);
    let running = 0;
    let peak = 0;
    const order: number[] = [];
    const start = (i: number) =>
      q.run(new AbortController().signal, async () => {
        running++;
        peak = Math.max(peak, running);
        order.push(i);
        await sleep(5);
        running--;
        return i;
      });
    const all = Promise.all([0, 1, 2, 3, 4, 5].map(start));
    expect(q.waiting).toBe(4);
    expect(await all).toEqual([0, 1, 2, 3, 4, 5]);
    expect(peak).toBe(2);
    expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    expect(q.waiting).toBe(0);
  });

  it("a start whose wait outlives its bound fails naming the queue, and a failed start frees its slot", async () => {
    const q = createStartQueue(1, 30);
    const stuck = q.run(new AbortController().signal, () => sleep(200).then(() => "slow"));
    await expect(q.run(new AbortController().signal, async () => "never")).rejects.toMatchObject({
      code: "E_NOMAD_START_QUEUE",
      message: expect.stringMatching(/waited 30 ms for one of the 1 start slots/),
    });
    expect(await stuck).toBe("slow");
    await expect(
      q.run(new AbortController().signal, async () => {
        throw new Error("dispatch refused");
      }),
    ).rejects.toThrow("dispatch refused");
    expect(await q.run(new AbortController().signal, async () => "after")).toBe("after");
  });

  it("an abort while queued ends the wait with the abort's reason and takes no slot", async () => {
    const q = createStartQueue(1, 10_000);
    let release!: () => void;
    const holder = q.run(new AbortController().signal, () => new Promise<void>((r) => (release = r)));
    const ac = new AbortController();
    const queued = q.run(ac.signal, async () => "ran");
    ac.abort(new Error("interrupted"));
    await expect(queued).rejects.toThrow("interrupted");
    expect(q.waiting).toBe(0);
    release();
    await holder;
    expect(await q.run(new AbortController().signal, async () => "next")).toBe("next");
  });
});
