import { describe, expect, it } from "vitest";
import { watchdogVerdict } from "../../../src/workers/podman/worker.js";

describe("watchdogVerdict", () => {
  const limits = { cpuSeconds: 10, memoryMb: 256 };

  it("ends the worker at its CPU time, naming what it used", () => {
    expect(watchdogVerdict({ cpuUsec: 10_000_000, newOomKills: 0 }, limits)).toEqual({
      reason: "cpu_time",
      detail: "used 10.0 s of CPU (limit 10 s)",
    });
  });

  it("an OOM kill the cgroup counted since the start is the memory limit; CPU time is told first", () => {
    expect(watchdogVerdict({ cpuUsec: 1, newOomKills: 1 }, limits)).toMatchObject({
      reason: "memory",
      detail: expect.stringContaining("256 MiB"),
    });
    expect(watchdogVerdict({ cpuUsec: 11e6, newOomKills: 1 }, limits)).toMatchObject({ reason: "cpu_time" });
  });

  it("nothing crossed, no cgroup to read, or no CPU limit: no verdict", () => {
    expect(watchdogVerdict({ cpuUsec: 9_999_999, newOomKills: 0 }, limits)).toBeUndefined();
    expect(watchdogVerdict({ cpuUsec: undefined, newOomKills: undefined }, limits)).toBeUndefined();
    expect(watchdogVerdict({ cpuUsec: 1e12, newOomKills: 0 }, { memoryMb: 256 })).toBeUndefined();
  });
});
