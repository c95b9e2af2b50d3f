import { describe, expect, it } from "vitest";
import { createDummyPoolable } from "../../../src/workers/pool/dummy-backend.js";
import { createWorkerPool } from "../../../src/workers/pool/pool.js";
import type { WorkerSpec } from "../../../src/workers/types.js";

const spec = (id: string): WorkerSpec => ({
  runId: "r",
  taskId: "t",
  trajectoryId: id,
  profile: "python",
  workspace: `/forks/${id}`,
  gateway: { socketPath: "/s/gw.sock" },
  limits: { memoryMb: 1024, pids: 256, wallClockMs: 60_000 },
  agent: true,
});

/** Polls `pred` every 5 ms for at most `ms` (bounded). */
async function until(pred: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Runs `n` trajectories one after another, each handed back with `outcome`. */
async function serial(
  pool: ReturnType<typeof createWorkerPool>,
  n: number,
  outcome: "completed" | "timeout" = "completed",
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const w = await pool.start(spec(`t${i}`));
    expect((await w.exec("pwd")).stdout).toBe(`/forks/t${i}`);
    ids.push(w.id);
    await w.release!(outcome);
  }
  return ids;
}

describe("worker reuse (--reuse)", () => {
  it("serves N trajectories on one booted worker, then retires it", async () => {
    const inner = createDummyPoolable({ bootMs: 5 });
    const pool = createWorkerPool(inner, { size: 1, idleMs: 10_000, maxBooting: 1, reuse: 3 });
    try {
      await pool.warm(spec("warm"), 6);
      const ids = await serial(pool, 6);
      expect(ids[0]).toBe(ids[1]);
      expect(ids[1]).toBe(ids[2]);
      expect(ids[3]).not.toBe(ids[2]);
      expect(ids[3]).toBe(ids[5]);
      expect(inner.booted.length).toBe(2);
      expect(inner.booted[0]!.specs.map((s) => s.trajectoryId)).toEqual(["t0", "t1", "t2"]);
      expect(inner.booted[0]!.resets).toBe(2);
      expect(inner.booted[0]!.stopped).toBe(true);
      expect(pool.state()).toMatchObject({ pooled: 6, reused: 4, cold: 0 });
    } finally {
      await pool.close();
    }
  });

  it("--reuse 1 is one trajectory per worker, as before reuse", async () => {
    const inner = createDummyPoolable({ bootMs: 5 });
    const pool = createWorkerPool(inner, { size: 1, idleMs: 10_000, maxBooting: 1, reuse: 1 });
    try {
      await pool.warm(spec("warm"), 3);
      const ids = await serial(pool, 3);
      expect(new Set(ids).size).toBe(3);
      expect(inner.booted.every((b) => b.resets === 0)).toBe(true);
      expect(pool.state().reused).toBe(0);
    } finally {
      await pool.close();
    }
  });

  it("retires a worker whose outcome is not clean, and one whose reset is not proven", async () => {
    const inner = createDummyPoolable({ bootMs: 5 });
    const notes: string[] = [];
    const pool = createWorkerPool(inner, {
      size: 1,
      idleMs: 10_000,
      maxBooting: 1,
      reuse: 8,
      onNote: (m) => notes.push(m),
    });
    try {
      await pool.warm(spec("warm"), 4);
      const a = await serial(pool, 1, "timeout");
      inner.dirtyResets(1);
      const b = await serial(pool, 1);
      const c = await serial(pool, 2);
      expect(a[0]).not.toBe(b[0]);
      expect(b[0]).not.toBe(c[0]);
      expect(c[0]).toBe(c[1]);
      expect(inner.booted[0]!.resets).toBe(0); // a timeout is never reset
      expect(inner.booted[1]!.resets).toBe(1); // reset, found dirty, retired
      expect(inner.booted[1]!.stopped).toBe(true);
      expect(notes.join("\n")).toContain("survived the kill (4242)");
      expect(pool.state()).toMatchObject({ resetRetired: 2, reused: 1 });
    } finally {
      await pool.close();
    }
  });

  it("boots one worker per concurrent slot, not one per trajectory", async () => {
    const inner = createDummyPoolable({ bootMs: 5 });
    const pool = createWorkerPool(inner, { size: 2, idleMs: 10_000, maxBooting: 2, reuse: 8 });
    try {
      await pool.warm(spec("warm"), 8);
      await until(() => pool.state().idle === 2);
      const slot = async (k: number) => {
        for (let i = 0; i < 4; i++) {
          const w = await pool.start(spec(`s${k}-${i}`));
          await w.release!("completed");
        }
      };
      await Promise.all([slot(0), slot(1)]);
      expect(inner.booted.length).toBe(2);
      expect(pool.state()).toMatchObject({ pooled: 8, cold: 0, reused: 6 });
    } finally {
      await pool.close();
    }
  });

  it("a plain stop() (owner could not say how it ended) retires; a backend without reset never reuses", async () => {
    const inner = createDummyPoolable({ bootMs: 5, resettable: false });
    const pool = createWorkerPool(inner, { size: 1, idleMs: 10_000, maxBooting: 1, reuse: 8 });
    try {
      await pool.warm(spec("warm"), 2);
      const w = await pool.start(spec("a"));
      await w.release!("completed");
      const v = await pool.start(spec("b"));
      await v.stop();
      expect(v.id).not.toBe(w.id);
      expect(inner.booted.slice(0, 2).every((b) => b.stopped)).toBe(true);
    } finally {
      await pool.close();
    }
  });
});
