import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CORE_GC_NODE_ARGS, CORE_GC_PRELOAD_PATH, lastCoreGcMarker } from "../src/core-gc.js";

describe("core-gc", () => {
  it("reads the last marker line of a core's log, and none from other lines", () => {
    const log = [
      "All services started successfully",
      "flakegym-core-gc 1 heap-used-mib 133.3 cpu-ms 140",
      "something flakegym-core-gc 9 heap-used-mib 1 cpu-ms 1", // not at the line's start: not a marker
      "flakegym-core-gc 2 heap-used-mib 134 cpu-ms 121",
      "flakegym-core-gc 3 heap-used-mib lots cpu-ms 1",
    ].join("\n");
    expect(lastCoreGcMarker(log)).toEqual({ seq: 2, heapUsedMib: 134, cpuMs: 121 });
    expect(lastCoreGcMarker("")).toBeUndefined();
    expect(lastCoreGcMarker("flakegym-core-gc")).toBeUndefined();
  });

  it("loads the preload that ships beside the supervisor", () => {
    expect(existsSync(CORE_GC_PRELOAD_PATH)).toBe(true);
    expect(CORE_GC_NODE_ARGS).toEqual(["--require", CORE_GC_PRELOAD_PATH]);
  });
});
