import { describe, expect, it } from "vitest";
import { exitWithin } from "../../src/workers/exit-within.js";
import type { Worker, WorkerExit } from "../../src/workers/types.js";

describe("exitWithin", () => {
  const exit: WorkerExit = { reason: "crashed", detail: "exit 137" };
  const worker = (exited?: Promise<WorkerExit>) => ({ exited }) as unknown as Worker;

  it("answers with the exit that comes within the grace", async () => {
    expect(await exitWithin(worker(Promise.resolve(exit)), 1000)).toBe(exit);
  });

  it("gives up after the grace when the worker does not say (bounded)", async () => {
    const t0 = performance.now();
    expect(await exitWithin(worker(new Promise(() => {})), 30)).toBeUndefined();
    expect(performance.now() - t0).toBeLessThan(1000);
  });

  it("does not wait without a grace or for a worker that cannot say", async () => {
    expect(await exitWithin(worker(Promise.resolve(exit)), 0)).toBeUndefined();
    expect(await exitWithin(worker(), 1000)).toBeUndefined();
  });
});
