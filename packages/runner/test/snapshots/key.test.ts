import { describe, expect, it } from "vitest";
import { defaultSnapshotCacheDir, snapshotKey } from "../../src/snapshots/key.js";

const input = {
  repo: "catalog:x",
  commit: "a".repeat(40),
  profile: "rust" as const,
  install: ["cargo build"],
  smoke: ["cargo test"],
  toolchain: ["cargo --version: cargo 1.95.0"],
  network: "none" as const,
};

describe("snapshotKey", () => {
  it("is a stable sha256 of the inputs", () => {
    expect(snapshotKey(input)).toMatch(/^[0-9a-f]{64}$/);
    expect(snapshotKey({ ...input })).toBe(snapshotKey(input));
  });
  it("changes with every input", () => {
    const k = snapshotKey(input);
    const variants = [
      { repo: "catalog:y" },
      { commit: "b".repeat(40) },
      { profile: "c" as const },
      { install: ["cargo build --release"] },
      { smoke: [] },
      { toolchain: ["cargo --version: cargo 1.96.0"] },
      { network: "required" as const },
    ];
    const keys = variants.map((v) => snapshotKey({ ...input, ...v }));
    expect(new Set([k, ...keys]).size).toBe(variants.length + 1);
  });
});

describe("defaultSnapshotCacheDir", () => {
  it("FLAKEGYM_CACHE, then XDG_CACHE_HOME, then ~/.cache", () => {
    expect(defaultSnapshotCacheDir({ FLAKEGYM_CACHE: "/c" })).toBe("/c/snapshots");
    expect(defaultSnapshotCacheDir({ XDG_CACHE_HOME: "/x" })).toBe("/x/flakegym/snapshots");
    expect(defaultSnapshotCacheDir({})).toMatch(/\.cache\/flakegym\/snapshots$/);
  });
});
