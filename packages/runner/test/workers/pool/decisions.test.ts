import { describe, expect, it } from "vitest";
import {
  bootFailureOf,
  bootsToStart,
  evictionFor,
  expiredIdle,
  type KeyState,
  planReconcile,
  poolByDefault,
  poolEvent,
  poolKeyOf,
  reconcileIntervalMs,
  resolvePool,
  unpoolableReason,
} from "../../../src/workers/pool/decisions.js";
import { REUSE_DEFAULT } from "../../../src/workers/pool/reuse.js";
import type { WorkerSpec } from "../../../src/workers/types.js";

const spec = (over: Partial<WorkerSpec> = {}): WorkerSpec => ({
  runId: "r",
  taskId: "t",
  trajectoryId: "a",
  profile: "python",
  workspace: "/w/a",
  depsDir: "/w/a-deps",
  gateway: { socketPath: "/s/gw.sock", url: "http://gateway/t/a/v1" },
  limits: { memoryMb: 4096, pids: 512, cpuSeconds: 600, diskMb: 2048, wallClockMs: 60_000 },
  agent: true,
  ...over,
});

describe("poolKeyOf", () => {
  it("a worker booted without the snapshot's interpreter bound cannot serve one that needs it", () => {
    expect(poolKeyOf(spec({ hostBinds: ["/opt/pythons/3.9.18"] }))).not.toBe(poolKeyOf(spec()));
    expect(poolKeyOf(spec({ hostBinds: ["/opt/pythons/3.9.18"] }))).toBe(
      poolKeyOf(spec({ hostBinds: ["/opt/pythons/3.9.18"] })),
    );
  });

  it("ignores what a trajectory brings at assignment (ids, workspace, wall clock, gateway route)", () => {
    const b = spec({
      trajectoryId: "b",
      taskId: "t2",
      workspace: "/w/b",
      depsDir: "/w/b-deps",
      gateway: { socketPath: "/s/gw.sock", url: "http://gateway/t/b/v1" },
      limits: { ...spec().limits, wallClockMs: 1 },
    });
    expect(poolKeyOf(b)).toBe(poolKeyOf(spec()));
  });
  it("separates what is fixed at boot: profile, limits, env, deps, gateway socket", () => {
    const base = poolKeyOf(spec());
    expect(poolKeyOf(spec({ profile: "rust" }))).not.toBe(base);
    expect(poolKeyOf(spec({ limits: { ...spec().limits, memoryMb: 1 } }))).not.toBe(base);
    expect(poolKeyOf(spec({ limits: { ...spec().limits, cpuSeconds: 1 } }))).not.toBe(base);
    expect(poolKeyOf(spec({ env: { A: "1" } }))).not.toBe(base);
    expect(poolKeyOf(spec({ depsDir: undefined }))).not.toBe(base);
    expect(poolKeyOf(spec({ gateway: { socketPath: "/other.sock" } }))).not.toBe(base);
  });
  it("does not depend on the env's order", () => {
    expect(poolKeyOf(spec({ env: { A: "1", B: "2" } }))).toBe(poolKeyOf(spec({ env: { B: "2", A: "1" } })));
  });
});

describe("unpoolableReason", () => {
  it("pools agent workers only", () => {
    expect(unpoolableReason(spec())).toBeUndefined();
    expect(unpoolableReason(spec({ agent: false }))).toMatch(/exec-only/);
    expect(unpoolableReason(spec({ readOnlyFiles: [{ hostPath: "/h", path: "t.py" }] }))).toMatch(
      /read-only/,
    );
    expect(unpoolableReason(spec({ gateway: { url: "http://x" } }))).toMatch(/unix socket/);
  });
});

const key = (k: string, idleSince: number[], booting: number, lastDemand: number): KeyState => ({
  key: k,
  idleSince,
  booting,
  lastDemand,
});

describe("expiredIdle", () => {
  it("stops idle workers past the idle limit", () => {
    expect(expiredIdle(key("a", [0, 900, 1000], 0, 1000), 1500, 1000)).toEqual([0]);
  });
  it("stops every idle worker of a key nobody asked for within the idle limit", () => {
    expect(expiredIdle(key("a", [1900, 1950], 0, 500), 2000, 1000)).toEqual([0, 1]);
  });
});

describe("bootsToStart", () => {
  const limits = { size: 4, idleMs: 1000, maxBooting: 2 };
  it("fills a wanted key up to the size, a few boots at a time", () => {
    expect(bootsToStart([key("a", [], 0, 100)], 200, limits)).toEqual(["a", "a"]);
    expect(bootsToStart([key("a", [1, 2], 1, 100)], 200, limits)).toEqual(["a"]);
    expect(bootsToStart([key("a", [1, 2, 3, 4], 0, 100)], 200, limits)).toEqual([]);
  });
  it("does not refill a key nobody asked for within the idle limit", () => {
    expect(bootsToStart([key("a", [], 0, 100)], 5000, limits)).toEqual([]);
  });
  it("shares the size between wanted keys, most recently asked first", () => {
    const got = bootsToStart([key("old", [], 0, 100), key("new", [], 0, 150)], 200, {
      ...limits,
      maxBooting: 4,
    });
    expect(got).toEqual(["new", "old", "new", "old"]);
  });
  it("never goes past the size counting booting workers", () => {
    expect(bootsToStart([key("a", [1], 3, 100)], 200, { ...limits, maxBooting: 9 })).toEqual([]);
  });
  it("never boots past a key's remaining trajectories, counting idle and booting workers", () => {
    const left = (k: KeyState, remaining: number): KeyState => ({ ...k, remaining });
    expect(bootsToStart([left(key("a", [], 0, 100), 1)], 200, limits)).toEqual(["a"]);
    expect(bootsToStart([left(key("a", [1], 1, 100), 3)], 200, limits)).toEqual(["a"]);
    expect(bootsToStart([left(key("a", [1], 1, 100), 2)], 200, limits)).toEqual([]);
    expect(bootsToStart([left(key("a", [], 0, 100), 0)], 200, limits)).toEqual([]);
    // the room one key cannot use goes to another
    const got = bootsToStart([left(key("done", [], 0, 150), 0), key("open", [], 0, 100)], 200, {
      ...limits,
      maxBooting: 4,
    });
    expect(got).toEqual(["open", "open", "open", "open"]);
  });
});

describe("evictionFor", () => {
  it("stops the oldest idle worker of the least recently asked key when a new key has no room", () => {
    const keys = [key("old", [30, 10], 0, 100), key("mid", [5], 0, 200), key("new", [], 0, 300)];
    expect(evictionFor(keys, "new", 3)).toEqual({ key: "old", index: 1 });
  });
  it("evicts nothing while there is room or the key already has workers", () => {
    expect(evictionFor([key("old", [1], 0, 1), key("new", [], 0, 2)], "new", 2)).toBeUndefined();
    expect(evictionFor([key("old", [1], 0, 1), key("new", [2], 0, 2)], "new", 2)).toBeUndefined();
  });
});

describe("planReconcile", () => {
  const limits = { size: 3, idleMs: 1000, maxBooting: 2 };
  it("retires expired workers (original indexes), then evicts from what is left, then boots into the room", () => {
    // old: [expired, fresh], asked long ago but still wanted; new: nothing, asked last
    const keys = [key("old", [0, 1500, 1600], 0, 1100), key("new", [], 0, 1900)];
    const plan = planReconcile(keys, 2000, limits);
    // 0 expired; then the pool (2 left) has room, so no eviction; one boot for new fills it
    expect(plan).toEqual({ retire: [{ key: "old", index: 0 }], boot: ["new"] });
  });
  it("maps an eviction chosen after expiry back to the worker's index as given", () => {
    // old: [expired at 0, 1700, 1500] — after expiry the oldest left is 1500, originally index 2
    const keys = [key("old", [0, 1700, 1500], 0, 1100), key("mid", [1800], 0, 1200), key("new", [], 0, 1900)];
    const plan = planReconcile(keys, 2000, limits);
    expect(plan.retire).toEqual([
      { key: "old", index: 0 },
      { key: "old", index: 2 },
    ]);
    expect(plan.boot).toEqual(["new"]);
  });
  it("evicts nothing for a most recent key that is no longer wanted, and boots nothing for it", () => {
    const keys = [key("a", [1500], 0, 0), key("b", [1500], 0, 10)];
    expect(planReconcile(keys, 2000, { ...limits, size: 2 })).toEqual({
      retire: [
        { key: "a", index: 0 },
        { key: "b", index: 0 },
      ],
      boot: [],
    });
  });
  it("plans nothing for an empty pool", () => {
    expect(planReconcile([], 5, limits)).toEqual({ retire: [], boot: [] });
  });
});

describe("reconcileIntervalMs", () => {
  it("is a quarter of the idle limit within 0.25–5 s", () => {
    expect(reconcileIntervalMs(100)).toBe(250);
    expect(reconcileIntervalMs(8000)).toBe(2000);
    expect(reconcileIntervalMs(120_000)).toBe(5000);
  });
});

describe("bootFailureOf", () => {
  it("notes each failure by its first line and makes the pool unavailable at the third in a row", () => {
    expect(bootFailureOf(1, "no core\nstack")).toEqual({ note: "pooled worker boot failed (1/3): no core" });
    expect(bootFailureOf(3, "no core\nstack")).toEqual({
      note: "pooled worker boot failed (3/3): no core",
      unavailable: "3 pooled boots failed in a row (last: no core)",
    });
  });
});

describe("poolByDefault", () => {
  it("is off for one-shot rollouts and on for long runs, evals and serve", () => {
    expect(poolByDefault({ command: "rollout", trajectories: 1 })).toBe(false);
    expect(poolByDefault({ command: "rollout", trajectories: 8 })).toBe(true);
    expect(poolByDefault({ command: "eval", trajectories: 1 })).toBe(true);
    expect(poolByDefault({ command: "serve", trajectories: 0 })).toBe(true);
  });
});

describe("resolvePool", () => {
  it("defaults to one ready worker per concurrency slot, capped by the run's trajectories", () => {
    expect(resolvePool({ command: "rollout", trajectories: 16, concurrency: 4 })).toEqual({
      size: 4,
      idleMs: 120_000,
      reuse: REUSE_DEFAULT,
    });
    expect(resolvePool({ command: "eval", trajectories: 2, concurrency: 4 })).toEqual({
      size: 2,
      idleMs: 120_000,
      reuse: REUSE_DEFAULT,
    });
    expect(resolvePool({ command: "serve", trajectories: 0, concurrency: 3 })).toEqual({
      size: 3,
      idleMs: 120_000,
      reuse: REUSE_DEFAULT,
    });
  });
  it("is off for a one-shot rollout unless asked, and --pool 0 turns it off", () => {
    expect(resolvePool({ command: "rollout", trajectories: 1, concurrency: 4 })).toBeUndefined();
    expect(resolvePool({ command: "rollout", trajectories: 1, concurrency: 4, size: 2, idleS: 30 })).toEqual({
      size: 2,
      idleMs: 30_000,
      reuse: REUSE_DEFAULT,
    });
    expect(resolvePool({ command: "eval", trajectories: 50, concurrency: 4, size: 0 })).toBeUndefined();
  });
  it("carries --reuse (default REUSE_DEFAULT, above 1: the reset is proven and the core's heap sealed)", () => {
    expect(REUSE_DEFAULT).toBeGreaterThan(1);
    expect(resolvePool({ command: "eval", trajectories: 8, concurrency: 2, reuse: 1 })).toEqual({
      size: 2,
      idleMs: 120_000,
      reuse: 1,
    });
  });
  it("counts workers serving a trajectory that come back as supply: no boot for them", () => {
    const limits = { size: 2, idleMs: 1000, maxBooting: 2 };
    const k = { key: "a", idleSince: [], booting: 0, lastDemand: 100, remaining: 2 };
    expect(bootsToStart([k], 200, limits)).toEqual(["a", "a"]);
    expect(bootsToStart([{ ...k, serving: 1 }], 200, limits)).toEqual(["a"]);
    expect(bootsToStart([{ ...k, serving: 2 }], 200, limits)).toEqual([]);
  });
});

describe("poolEvent", () => {
  it("carries the state a progress line shows", () => {
    expect(
      poolEvent({ idle: 1, booting: 2, pooled: 3, cold: 4, retired: 5, reused: 0, resetRetired: 0 }),
    ).toEqual({
      type: "pool",
      idle: 1,
      booting: 2,
      pooled: 3,
      cold: 4,
    });
  });
});
