import { describe, expect, it } from "vitest";
import {
  decideMemoryMerge,
  MERGE_MEMORY_EXEC_PATH,
  type MemoryMergeFacts,
  parseMemoryMergeEnv,
  SYSTEM_PYTHON,
} from "../src/memory-merge.js";

const linux: MemoryMergeFacts = {
  platform: "linux",
  kernelRelease: "6.18.44-fc-v595",
  pythonPresent: true,
  ksmRun: "1",
};

describe("decideMemoryMerge", () => {
  it("is on by default on a kernel that runs same-page merging, through the prctl helper", () => {
    expect(decideMemoryMerge(linux)).toEqual({ on: true, prefix: [SYSTEM_PYTHON, MERGE_MEMORY_EXEC_PATH] });
    expect(decideMemoryMerge({ ...linux, kernelRelease: "6.4.0" }).on).toBe(true);
  });

  it("is off when the caller or the environment turns it off, saying which", () => {
    expect(decideMemoryMerge({ ...linux, requested: false })).toEqual({
      on: false,
      reason: "turned off by the caller",
    });
    expect(decideMemoryMerge({ ...linux, envValue: "0" })).toEqual({
      on: false,
      reason: "turned off by FLAKEGYM_CORE_MEMORY_MERGE=0",
    });
    // the caller's explicit choice wins over the environment
    expect(decideMemoryMerge({ ...linux, envValue: "0", requested: true }).on).toBe(true);
  });

  it("names what the machine lacks", () => {
    const why = (f: Partial<MemoryMergeFacts>) => {
      const d = decideMemoryMerge({ ...linux, ...f });
      return d.on ? "on" : d.reason;
    };
    expect(why({ platform: "darwin" })).toMatch(/Linux only \(darwin\)/);
    expect(why({ kernelRelease: "6.3.9" })).toMatch(/kernel 6\.3\.9 .*≥ 6\.4/);
    expect(why({ kernelRelease: "5.15.0" })).toMatch(/needs ≥ 6\.4/);
    expect(why({ kernelRelease: "weird" })).toMatch(/needs ≥ 6\.4/);
    expect(why({ ksmRun: "0" })).toMatch(/ksm\/run is 0.*echo 1 >/);
    const { ksmRun: _, ...noKsm } = linux;
    expect(decideMemoryMerge(noKsm)).toMatchObject({ on: false, reason: expect.stringMatching(/is absent/) });
    expect(why({ pythonPresent: false })).toMatch(/python3 is absent/);
  });
});

describe("parseMemoryMergeEnv", () => {
  it("reads the usual spellings of a switch", () => {
    for (const v of ["1", "on", "TRUE", " yes "]) expect(parseMemoryMergeEnv(v)).toBe(true);
    for (const v of ["0", "off", "False", "no"]) expect(parseMemoryMergeEnv(v)).toBe(false);
  });
  it("refuses anything else, naming the variable and the fix", () => {
    expect(() => parseMemoryMergeEnv("maybe")).toThrow(/FLAKEGYM_CORE_MEMORY_MERGE='maybe' is not a switch/);
    expect(() => decideMemoryMerge({ ...linux, envValue: "2" })).toThrow(/not a switch/);
  });
});
