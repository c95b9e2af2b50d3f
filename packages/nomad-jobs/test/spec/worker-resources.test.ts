import { describe, expect, it } from "vitest";
import {
  CLINE_CORE_MEMORY_MB,
  checkAgentMemory,
  MIN_AGENT_HEADROOM_MB,
  sizeWorkerMemory,
  taskResources,
  WorkerResources,
  WorkerSandbox,
  writableLayerQuota,
} from "../../src/spec/worker-resources.js";

describe("worker resources", () => {
  it("sizeWorkerMemory: the task's limit plus the core; a smaller reservation moves the need to MemoryMaxMB", () => {
    expect(sizeWorkerMemory({ agent: true, limitMb: 4096 })).toEqual({ memoryMb: 4512, memoryMaxMb: 0 });
    expect(sizeWorkerMemory({ agent: false, limitMb: 4096 })).toEqual({ memoryMb: 4096, memoryMaxMb: 0 });
    expect(sizeWorkerMemory({ agent: true, limitMb: 1024, reserveMb: 800 })).toEqual({
      memoryMb: 800,
      memoryMaxMb: 1440,
    });
    expect(sizeWorkerMemory({ agent: true, limitMb: 1024, reserveMb: 9000 })).toEqual({
      memoryMb: 1440,
      memoryMaxMb: 0,
    });
  });

  it("taskResources: the reservation never exceeds the hard limit; no MemoryMaxMB when it adds nothing", () => {
    const r = (o: object) => taskResources(WorkerResources.parse(o));
    expect(r({ cpuMhz: 500, memoryMb: 1000, memoryMaxMb: 1000 })).toEqual({
      CPU: 500,
      MemoryMB: 1000,
      MemoryMaxMB: 0,
    });
    expect(r({ memoryMb: 800, memoryMaxMb: 2000 })).toEqual({ CPU: 1000, MemoryMB: 800, MemoryMaxMB: 2000 });
    expect(r({ memoryMb: 3000, memoryMaxMb: 2000 })).toEqual({ CPU: 1000, MemoryMB: 2000, MemoryMaxMB: 0 });
  });

  it("checkAgentMemory: the floor is the core plus the agent's headroom, on the larger of the two limits", () => {
    const floor = CLINE_CORE_MEMORY_MB + MIN_AGENT_HEADROOM_MB;
    const check =
      (memoryMb: number, memoryMaxMb = 0) =>
      () =>
        checkAgentMemory(WorkerResources.parse({ memoryMb, memoryMaxMb }));
    expect(check(floor)).not.toThrow();
    expect(check(floor - 1)).toThrow(`worker memory ${floor - 1} MB is below ${floor} MB`);
    expect(check(floor - 1)).toThrow("raise resources.memoryMb");
    expect(check(256, floor)).not.toThrow();
  });

  it("writableLayerQuota: docker's storage_opt at the job's disk, only when on and a disk is known", () => {
    const on = WorkerSandbox.parse({});
    expect(writableLayerQuota(on, 4096)).toEqual({ storage_opt: { size: "4096M" } });
    expect(writableLayerQuota(on, undefined)).toEqual({});
    expect(writableLayerQuota(WorkerSandbox.parse({ writableLayerQuota: false }), 4096)).toEqual({});
  });

  it("the schemas are strict: an unknown or misspelt option is refused", () => {
    expect(WorkerResources.safeParse({ memoryMB: 1 }).success).toBe(false);
    expect(WorkerSandbox.safeParse({ pidLimit: 1 }).success).toBe(false);
  });
});
