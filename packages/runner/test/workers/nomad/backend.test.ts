import { nomadVar } from "@flakegym/nomad-jobs";
import { describe, expect, it } from "vitest";
import { dispatchSnapshotDir, workerDriver, workerParentJob } from "../../../src/workers/nomad/backend.js";
import { NomadBackendOptions } from "../../../src/workers/nomad/options.js";
import type { WorkerSpec } from "../../../src/workers/types.js";

const IMAGE = `oci.example/x@sha256:${"1".repeat(64)}`;
const spec = (over: Partial<WorkerSpec> = {}): WorkerSpec => ({
  runId: "run/1",
  taskId: "owner/repo#42",
  trajectoryId: "t1",
  profile: "rust",
  workspace: "",
  image: IMAGE,
  gateway: { url: "http://10.0.0.5:8089/v1" },
  limits: { memoryMb: 3000, pids: 256, wallClockMs: 900_000, diskMb: 6000 },
  agent: true,
  ...over,
});
const opts = NomadBackendOptions.parse({ driver: { driver: "docker", runtime: "runsc" } });

describe("worker parent job", () => {
  it("one parent per (run, task, spec): trajectories share it, another image does not", () => {
    // each trajectory has its own gateway route: it travels in the dispatch's meta, not the parent
    const a = workerParentJob(opts, spec({ trajectoryId: "t1" }), "http://10.0.0.5:8089/t/t1/v1", 1_000);
    const b = workerParentJob(opts, spec({ trajectoryId: "t2" }), "http://10.0.0.5:8089/t/t2/v1", 2_000);
    expect(a.TaskGroups[0]!.Tasks[0]!.Env?.FLAKEGYM_POLICY_BASE_URL).toBe(
      nomadVar("NOMAD_META_flakegym_policy_url"),
    );
    expect(a.ParameterizedJob?.MetaRequired).toContain("flakegym_policy_url");
    const c = workerParentJob(
      opts,
      spec({ image: `oci.example/x@sha256:${"2".repeat(64)}` }),
      "http://10.0.0.5:8089/v1",
      1_000,
    );
    expect(a.ID).toBe(b.ID);
    expect(a.ID).not.toBe(c.ID);
    expect(a.ID).toMatch(/^flakegym-run-1-owner-repo-42-agent-[0-9a-f]{8}$/);
    expect(a.Meta?.flakegym_expires).toBe(String(1_000 + 24 * 3_600_000));
  });

  it("raw_exec: each trajectory's fork travels in its dispatch, so its trajectories share one parent too", () => {
    const raw = NomadBackendOptions.parse({
      driver: { driver: "raw_exec", command: "/bin/worker", allowUnisolated: true },
    });
    const a = workerParentJob(
      raw,
      spec({ trajectoryId: "t1", workspace: "/forks/t1" }),
      "http://10.0.0.5:8089/t/t1/v1",
      1,
    );
    const b = workerParentJob(
      raw,
      spec({ trajectoryId: "t2", workspace: "/forks/t2" }),
      "http://10.0.0.5:8089/t/t2/v1",
      2,
    );
    expect(a.ID).toBe(b.ID);
    expect(JSON.stringify(a)).not.toContain("/forks/t1");
    expect(a.ParameterizedJob?.MetaOptional).toContain("flakegym_snapshot_dir");
    expect(a.Meta?.flakegym_snapshot_dir).toBe("");
    expect(a.TaskGroups[0]!.Tasks[0]!.Env?.FLAKEGYM_SNAPSHOT_DIR).toBe(
      nomadVar("NOMAD_META_flakegym_snapshot_dir"),
    );
    expect(dispatchSnapshotDir(raw, { workspace: "/forks/t1" })).toBe("/forks/t1");
    // the backend's own snapshot dir is shared by every trajectory: it stays in the parent
    const shared = NomadBackendOptions.parse({ ...raw, snapshotDir: "/snapshots/demo" });
    expect(dispatchSnapshotDir(shared, { workspace: "/forks/t1" })).toBeUndefined();
    const p = workerParentJob(shared, spec({ workspace: "/forks/t1" }), "http://10.0.0.5:8089/v1", 1);
    expect(p.TaskGroups[0]!.Tasks[0]!.Env?.FLAKEGYM_SNAPSHOT_DIR).toBe("/snapshots/demo");
  });

  it("maps the spec's limits: memory (the task's limit + the measured core), pids, disk, max run duration", () => {
    const j = workerParentJob(opts, spec(), "http://10.0.0.5:8089/v1", 0);
    const g = j.TaskGroups[0]!;
    // MemoryMB is the hard limit without oversubscription: it holds the whole need
    expect(g.Tasks[0]!.Resources).toEqual({ CPU: 1000, MemoryMB: 3000 + 416, MemoryMaxMB: 0 });
    // a smaller reservation (oversubscribed cluster) moves the need to MemoryMaxMB
    const over = NomadBackendOptions.parse({ ...opts, resources: { memoryMb: 1024 } });
    expect(
      workerParentJob(over, spec(), "http://10.0.0.5:8089/v1", 0).TaskGroups[0]!.Tasks[0]!.Resources,
    ).toEqual({ CPU: 1000, MemoryMB: 1024, MemoryMaxMB: 3416 });
    expect(g.Disconnect).toEqual({ Replace: false });
    expect(g.Tasks[0]!.Config).toMatchObject({ pids_limit: 256, runtime: "runsc", image: IMAGE });
    expect(g.EphemeralDisk).toEqual({ SizeMB: 6000 });
    // wall clock + start timeout + grace, in ns
    expect(g.MaxRunDuration).toBe((900_000 + 300_000 + 600_000) * 1e6);
  });

  it("driver needs: an image for containers, a flake output for nix", () => {
    expect(() => workerDriver(opts.driver, { profile: "rust" })).toThrow("needs an image");
    const nix = NomadBackendOptions.parse({
      driver: { driver: "nix", flake: "github:o/flakegym#worker-{profile}", command: "w" },
    });
    expect(workerDriver(nix.driver, { profile: "rust" })).toMatchObject({
      flake: "github:o/flakegym#worker-rust",
    });
    expect(workerDriver(nix.driver, { profile: "rust", image: ".#snap-abc" })).toMatchObject({
      flake: ".#snap-abc",
    });
    const bare = NomadBackendOptions.parse({ driver: { driver: "nix", command: "w" } });
    expect(() => workerDriver(bare.driver, { profile: "go" })).toThrow("needs a flake output");
  });
});
