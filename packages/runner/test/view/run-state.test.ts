import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bootId, pidNamespace, selfOwner } from "../../src/gc/owner.js";
import { lockStateOf, runStateOf } from "../../src/view/run-state.js";
import { openSafeRoot } from "../../src/view/safe-read.js";

describe("runStateOf: a run's state from what it wrote", () => {
  const done = { complete: true, interrupted: false };
  it("complete, stopped and failed from summary.json when no live runner holds the dir", () => {
    expect(runStateOf(done, "absent")).toBe("complete");
    expect(runStateOf({ complete: false, interrupted: true }, "absent")).toBe("stopped");
    expect(runStateOf({ complete: false, interrupted: false }, "dead")).toBe("failed");
  });
  it("a run without summary.json and without a live runner failed (never 'in progress')", () => {
    expect(runStateOf(null, "absent")).toBe("failed");
    expect(runStateOf(null, "dead")).toBe("failed");
  });
  it("a live lock is running, even over an older summary (a --resume in progress)", () => {
    expect(runStateOf(null, "live")).toBe("running");
    expect(runStateOf({ complete: false, interrupted: true }, "live")).toBe("running");
  });
});

describe("lockStateOf: the run lock judged as the runner judges it", () => {
  const record = (pid: number, startTime: string) => ({
    pid,
    startTime,
    bootId: bootId(),
    pidNs: pidNamespace(),
    host: hostname(),
    command: "rollout",
    startedAt: new Date().toISOString(),
    nonce: "n",
  });
  it("absent, live (this process), dead (a start time no process has) and torn (held)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "fg-run-state-"));
    try {
      const root = await openSafeRoot(dir);
      expect(await lockStateOf(root, [])).toBe("absent");
      await writeFile(join(dir, "run.lock"), JSON.stringify(record(process.pid, selfOwner().startTime)));
      expect(await lockStateOf(root, [])).toBe("live");
      await writeFile(join(dir, "run.lock"), JSON.stringify(record(process.pid, "1")));
      expect(await lockStateOf(root, [])).toBe("dead");
      await writeFile(join(dir, "run.lock"), '{"pid": 1');
      expect(await lockStateOf(root, [])).toBe("live");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
