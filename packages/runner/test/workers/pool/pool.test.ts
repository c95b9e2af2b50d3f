import { describe, expect, it } from "vitest";
import { createDummyPoolable } from "../../../src/workers/pool/dummy-backend.js";
import { createWorkerPool } from "../../../src/workers/pool/pool.js";
import type { PoolState } from "../../../src/workers/pool/types.js";
import type { WorkerSpec } from "../../../src/workers/types.js";

const spec = (id: string, over: Partial<WorkerSpec> = {}): WorkerSpec => ({
  runId: "r",
  taskId: "t",
  trajectoryId: id,
  profile: "python",
  workspace: `/forks/${id}`,
  gateway: { socketPath: "/s/gw.sock" },
  limits: { memoryMb: 1024, pids: 256, wallClockMs: 60_000 },
  agent: true,
  ...over,
});

/** Polls `pred` every 5 ms for at most `ms` (bounded). */
async function until(pred: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe("createWorkerPool", () => {
  it("hands out pre-booted workers that adopt the trajectory's workspace, and refills", async () => {
    const inner = createDummyPoolable({ bootMs: 10 });
    // one trajectory per worker: a worker out serving is not counted as supply, the pool refills
    const pool = createWorkerPool(inner, { size: 2, idleMs: 10_000, reuse: 1 });
    try {
      await pool.warm(spec("warm"));
      await until(() => pool.state().idle === 2);
      const w = await pool.start(spec("a"));
      expect(w.pooled).toBe(true);
      expect((await w.exec("pwd")).stdout).toBe("/forks/a");
      await until(() => pool.state().idle === 2);
      expect(pool.state()).toMatchObject({ pooled: 1, cold: 0, idle: 2 });
      // served once, then its owner destroys it: a worker is never handed out twice
      await w.stop();
      const b = await pool.start(spec("b"));
      expect(b.id).not.toBe(w.id);
      expect(inner.booted.filter((x) => x.spec?.trajectoryId === "a")).toHaveLength(1);
      await b.stop();
    } finally {
      await pool.close();
    }
    expect(inner.booted.every((x) => x.stopped)).toBe(true);
  });

  it("starts cold when nothing is idle, and warms the key for the next trajectory", async () => {
    const inner = createDummyPoolable({ bootMs: 10 });
    const pool = createWorkerPool(inner, { size: 1, idleMs: 10_000 });
    try {
      const a = await pool.start(spec("a"));
      expect(a.pooled).toBe(false);
      await until(() => pool.state().idle === 1);
      const b = await pool.start(spec("b"));
      expect(b.pooled).toBe(true);
      expect(pool.state()).toMatchObject({ pooled: 1, cold: 1 });
    } finally {
      await pool.close();
    }
  });

  it("never hands out a worker that died while idle, and replaces it", async () => {
    const notes: string[] = [];
    const inner = createDummyPoolable({ bootMs: 10 });
    const pool = createWorkerPool(inner, { size: 1, idleMs: 10_000, onNote: (m) => notes.push(m) });
    try {
      await pool.warm(spec("warm"));
      await until(() => pool.state().idle === 1);
      const dead = inner.booted[0]!.id;
      inner.crashIdle(dead);
      await until(() => pool.state().idle === 1 && inner.booted.length === 2);
      const w = await pool.start(spec("a"));
      expect(w.id).not.toBe(dead);
      expect(w.pooled).toBe(true);
      expect(pool.state().retired).toBe(1);
      expect(notes.join("\n")).toMatch(new RegExp(`${dead} ended while idle: crashed`));
    } finally {
      await pool.close();
    }
  });

  it("stops idle workers past the idle limit and does not refill an unasked key", async () => {
    const inner = createDummyPoolable({ bootMs: 5 });
    const pool = createWorkerPool(inner, { size: 2, idleMs: 300 });
    try {
      await pool.warm(spec("warm"));
      await until(() => pool.state().idle === 2);
      await until(() => pool.state().idle === 0 && pool.state().booting === 0, 5000);
      await new Promise((r) => setTimeout(r, 400));
      expect(pool.state().idle).toBe(0);
      expect(inner.booted.every((x) => x.stopped)).toBe(true);
    } finally {
      await pool.close();
    }
  });

  it("starts exec-only workers outside the pool, counted neither pooled nor cold (they boot no core)", async () => {
    const inner = createDummyPoolable({ bootMs: 5 });
    const pool = createWorkerPool(inner, { size: 1, idleMs: 10_000 });
    try {
      const s = await pool.start(spec("score", { agent: false }));
      expect(s.pooled).toBe(false);
      expect(pool.state()).toMatchObject({ idle: 0, booting: 0, pooled: 0, cold: 0 });
      expect(inner.booted).toHaveLength(1);
    } finally {
      await pool.close();
    }
  });

  it("says why and starts every worker cold when the backend cannot pool", async () => {
    const states: PoolState[] = [];
    const notes: string[] = [];
    const inner = createDummyPoolable({ unavailable: "not root" });
    const pool = createWorkerPool(inner, {
      size: 2,
      idleMs: 10_000,
      onState: (s) => states.push(s),
      onNote: (m) => notes.push(m),
    });
    try {
      await pool.warm(spec("warm"));
      const w = await pool.start(spec("a"));
      expect(w.pooled).toBe(false);
      expect(pool.state()).toMatchObject({ unavailable: "not root", idle: 0, cold: 1 });
      expect(notes).toEqual(["warm pool unavailable, workers start cold: not root"]);
      expect(inner.booted).toHaveLength(1);
    } finally {
      await pool.close();
    }
  });

  it("gives up after repeated boot failures and starts cold", async () => {
    const inner = createDummyPoolable({ bootMs: 5 });
    inner.failBoots(3);
    const pool = createWorkerPool(inner, { size: 1, idleMs: 10_000, maxBooting: 1 });
    try {
      await pool.warm(spec("warm"));
      await until(() => pool.state().unavailable !== undefined);
      expect(pool.state().unavailable).toMatch(/3 pooled boots failed/);
      expect((await pool.start(spec("a"))).pooled).toBe(false);
    } finally {
      await pool.close();
    }
  });
});

describe("createWorkerPool: the run's remaining trajectories", () => {
  it("boots no worker nobody will use: every boot serves one of the trajectories announced", async () => {
    const inner = createDummyPoolable({ bootMs: 10 });
    const pool = createWorkerPool(inner, { size: 4, idleMs: 10_000, maxBooting: 4 });
    const ran: string[] = [];
    try {
      await pool.warm(spec("warm"), 3);
      await until(() => pool.state().idle === 3);
      // the pool has room for a fourth, but only three trajectories are to come
      await new Promise((r) => setTimeout(r, 50));
      expect(pool.state()).toMatchObject({ idle: 3, booting: 0 });
      for (const id of ["a", "b", "c"]) {
        const w = await pool.start(spec(id));
        expect(w.pooled).toBe(true);
        ran.push((await w.exec("pwd")).stdout);
        await w.stop();
      }
      // the last trajectory started: nothing refills
      await new Promise((r) => setTimeout(r, 50));
      expect(pool.state()).toMatchObject({ idle: 0, booting: 0, pooled: 3, cold: 0, retired: 0 });
    } finally {
      await pool.close();
    }
    expect(ran).toEqual(["/forks/a", "/forks/b", "/forks/c"]);
    expect(inner.booted.map((b) => b.spec?.trajectoryId)).toEqual(["a", "b", "c"]);
  });

  it("adds up what several tasks of one shape announce, and keeps refilling while trajectories remain", async () => {
    const inner = createDummyPoolable({ bootMs: 10 });
    const pool = createWorkerPool(inner, { size: 2, idleMs: 10_000 });
    try {
      await pool.warm(spec("warm-1", { taskId: "t1" }), 2);
      await pool.warm(spec("warm-2", { taskId: "t2" }), 3);
      for (let i = 0; i < 5; i++) {
        await until(() => pool.state().idle >= Math.min(2, 5 - i));
        const w = await pool.start(spec(`x${i}`));
        expect(w.pooled).toBe(true);
        await w.stop();
      }
      await new Promise((r) => setTimeout(r, 50));
      expect(pool.state()).toMatchObject({ idle: 0, booting: 0, pooled: 5, retired: 0 });
      expect(inner.booted).toHaveLength(5);
    } finally {
      await pool.close();
    }
  });

  it("counts a trajectory waiting for a boot in flight as still to serve", async () => {
    const inner = createDummyPoolable({ bootMs: 100 });
    const pool = createWorkerPool(inner, { size: 2, idleMs: 10_000, maxBooting: 1 });
    try {
      await pool.warm(spec("warm"), 2);
      await until(() => pool.state().booting === 1);
      const [a, b] = await Promise.all([pool.start(spec("a")), pool.start(spec("b"))]);
      expect([a.pooled, b.pooled]).toEqual([true, false]);
      await new Promise((r) => setTimeout(r, 150));
      expect(pool.state()).toMatchObject({ idle: 0, booting: 0, pooled: 1, cold: 1, retired: 0 });
    } finally {
      await pool.close();
    }
  });
});

describe("createWorkerPool: waiting for a boot in flight", () => {
  it("gives a trajectory the worker already booting for its key instead of booting another", async () => {
    const inner = createDummyPoolable({ bootMs: 200 });
    const pool = createWorkerPool(inner, { size: 1, idleMs: 10_000 });
    try {
      await pool.warm(spec("warm"));
      await until(() => pool.state().booting === 1);
      const w = await pool.start(spec("a"));
      expect(w.pooled).toBe(true);
      expect(pool.state().cold).toBe(0);
      expect(inner.booted[0]!.spec?.trajectoryId).toBe("a");
    } finally {
      await pool.close();
    }
  });

  it("starts cold when the boot it waited for fails", async () => {
    const inner = createDummyPoolable({ bootMs: 50 });
    inner.failBoots(1);
    const pool = createWorkerPool(inner, { size: 1, idleMs: 10_000, maxBooting: 1 });
    try {
      await pool.warm(spec("warm"));
      await until(() => pool.state().booting === 1);
      const w = await pool.start(spec("a"));
      expect(w.pooled).toBe(false);
    } finally {
      await pool.close();
    }
  });
});
