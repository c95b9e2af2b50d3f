import { describe, expect, it } from "vitest";
import { statBytes } from "../../../src/workers/local/cgroup.js";

describe("statBytes (a cgroup's own memory from memory.stat)", () => {
  const v1 = "cache 4096\nrss 100\nshmem 7\ntotal_cache 999\ntotal_rss 2000\ntotal_shmem 30\n";
  it("sums the named counters, matching whole names only", () => {
    expect(statBytes(v1, ["total_rss", "total_shmem"])).toBe(2030);
    expect(statBytes("anon 5\nanon_thp 9\nshmem 1\n", ["anon", "shmem"])).toBe(6);
  });
  it("is undefined when a counter is missing (the caller falls back to the whole usage)", () => {
    expect(statBytes(v1, ["anon", "shmem"])).toBeUndefined();
    expect(statBytes("", ["total_rss"])).toBeUndefined();
  });
});
