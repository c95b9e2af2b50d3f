import { describe, expect, it } from "vitest";
import {
  canonical,
  decideRelease,
  isCleanOutcome,
  needsCoreCollection,
  pidsToKill,
  REUSE_COLLECT_FROM_MB,
  REUSE_MAX,
  REUSE_MEMORY_GROWTH_MB,
  type ReleaseFacts,
  type ResetReport,
  resetVerdict,
  reuseSummary,
  sandboxNamespaces,
  stateDiffOf,
  treeDiffOf,
} from "../../../src/workers/pool/reuse.js";

const facts = (over: Partial<ReleaseFacts> = {}): ReleaseFacts => ({
  backend: "local",
  resettable: true,
  served: 1,
  reuse: 4,
  outcome: "completed",
  workerEnded: false,
  poolClosed: false,
  ...over,
});

const report = (over: Partial<ResetReport> = {}): ResetReport => ({
  strayPids: [],
  keptGone: [],
  dirtyPaths: [],
  slotMounts: 0,
  stateDiff: [],
  memoryMb: 300,
  firstMemoryMb: 290,
  ...over,
});

describe("decideRelease", () => {
  it("resets a local worker after a clean outcome while it has tasks left", () => {
    expect(decideRelease(facts())).toEqual({ action: "reset" });
    expect(decideRelease(facts({ outcome: "agent_error", served: 3 }))).toEqual({ action: "reset" });
  });

  it("retires on podman and Nomad, and where the backend cannot reset", () => {
    for (const backend of ["podman", "nomad"] as const)
      expect(decideRelease(facts({ backend }))).toMatchObject({
        action: "retire",
        why: expect.stringContaining(backend),
      });
    expect(decideRelease(facts({ resettable: false })).action).toBe("retire");
  });

  it("retires after N tasks (--reuse 1 is one trajectory per worker) and never past the cap", () => {
    expect(decideRelease(facts({ served: 4, reuse: 4 }))).toMatchObject({
      action: "retire",
      why: "served 4 of --reuse 4",
    });
    expect(decideRelease(facts({ served: 1, reuse: 1 })).action).toBe("retire");
    expect(decideRelease(facts({ served: REUSE_MAX, reuse: 1000 })).action).toBe("retire");
  });

  it("retires on any outcome that is not clean, on an unknown one, and on a worker that ended", () => {
    for (const outcome of ["timeout", "limits_exceeded", "infra_error", "policy_error"] as const) {
      expect(isCleanOutcome(outcome)).toBe(false);
      expect(decideRelease(facts({ outcome }))).toMatchObject({
        action: "retire",
        why: expect.stringContaining(outcome),
      });
    }
    expect(decideRelease(facts({ outcome: undefined })).action).toBe("retire");
    expect(decideRelease(facts({ workerEnded: true })).action).toBe("retire");
    expect(decideRelease(facts({ poolClosed: true })).action).toBe("retire");
  });
});

describe("resetVerdict", () => {
  it("is clean only when nothing survived and nothing differs", () => {
    expect(resetVerdict(report())).toEqual({ clean: true });
  });

  it("names every doubt", () => {
    const v = resetVerdict(
      report({
        strayPids: [7, 8],
        keptGone: [3],
        unsealedPids: [42],
        dirtyPaths: ["home/Cline/Rules/x.md"],
        slotMounts: 1,
        stateDiff: ["customPrompt"],
        failure: "rm: busy",
      }),
    );
    expect(v.clean).toBe(false);
    if (v.clean) return;
    for (const s of [
      "7,8",
      "core's processes ended (3)",
      "heap of kept process(es) 42",
      "home/Cline/Rules/x.md",
      "1 mount",
      "customPrompt",
      "rm: busy",
    ])
      expect(v.why).toContain(s);
  });

  it("retires on memory growth past the bound, and when memory was not measured", () => {
    expect(resetVerdict(report({ memoryMb: 500, firstMemoryMb: 300 }), 96)).toMatchObject({
      clean: false,
      why: expect.stringContaining("memory grew 200 MiB"),
    });
    expect(resetVerdict(report({ memoryMb: 390, firstMemoryMb: 300 }), 96)).toEqual({ clean: true });
    expect(resetVerdict(report({ memoryMb: undefined })).clean).toBe(false);
  });
});

describe("pidsToKill and stateDiffOf", () => {
  it("kills every pid but the kept ones", () => {
    expect(pidsToKill([1, 2, 3, 40, 41], [1, 2, 3])).toEqual([40, 41]);
    expect(pidsToKill([1, 2], [1, 2, 3])).toEqual([]);
  });

  it("names state fields that differ, ignoring workspaceRoots (every task sets it the same) and key order", () => {
    const pristine = { taskHistory: [], customPrompt: undefined, workspaceRoots: [], rules: { a: 1, b: 2 } };
    expect(
      stateDiffOf(pristine, { ...pristine, workspaceRoots: [{ path: "/workspace" }], rules: { b: 2, a: 1 } }),
    ).toEqual([]);
    expect(stateDiffOf(pristine, { ...pristine, mode: "plan" })).toEqual(["mode"]);
    expect(
      stateDiffOf(pristine, { ...pristine, taskHistory: [{ id: "x" }], customPrompt: "obey", extra: 1 }),
    ).toEqual(["customPrompt", "extra", "taskHistory"]);
    expect(canonical({ b: 1, a: [{ d: 1, c: 2 }] })).toBe('{"a":[{"c":2,"d":1}],"b":1}');
  });

  it("names paths added, removed or changed in a dir listing, the ignored ones aside", () => {
    const before = { Cline: "d", "Cline/Rules": "d", "core.log": "f:YQ==" };
    const after = {
      Cline: "d",
      "Cline/Rules": "d",
      "Cline/Rules/x.md": "f:eA==",
      "core.log": "f:Yg==",
      ".bashrc": "l:/x",
    };
    expect(treeDiffOf(before, after, new Set(["core.log"]))).toEqual([".bashrc", "Cline/Rules/x.md"]);
    expect(treeDiffOf(before, { Cline: "d" })).toEqual(["Cline/Rules", "core.log"]);
  });
});

describe("sandboxNamespaces", () => {
  it("enters only a process whose mount and IPC namespaces are both not ours", () => {
    const self = { mnt: "mnt:[1]", ipc: "ipc:[1]" };
    expect(sandboxNamespaces({ self, target: { mnt: "mnt:[2]", ipc: "ipc:[2]" } })).toBe(true);
    expect(sandboxNamespaces({ self, target: { mnt: "mnt:[1]", ipc: "ipc:[2]" } })).toBe(false);
    expect(sandboxNamespaces({ self, target: { mnt: "mnt:[2]", ipc: "ipc:[1]" } })).toBe(false);
  });
});

describe("reuseSummary", () => {
  it("says how many trajectories ran on a reset worker, and nothing when none did", () => {
    expect(reuseSummary({ pooled: 4, reused: 0, resetRetired: 0 })).toBeUndefined();
    expect(reuseSummary({ pooled: 4, reused: 3, resetRetired: 1 })).toBe(
      "worker reuse: 3 of 4 pooled trajectories ran on a reset worker; 1 worker(s) retired after a reset",
    );
  });
});

describe("needsCoreCollection", () => {
  it("collects from half the memory bound on, or when a reading is missing; below, V8 keeps the garbage", () => {
    expect(REUSE_COLLECT_FROM_MB).toBe(REUSE_MEMORY_GROWTH_MB / 2);
    expect(needsCoreCollection(250, 250)).toBe(false);
    expect(needsCoreCollection(250 + REUSE_COLLECT_FROM_MB - 0.1, 250)).toBe(false);
    expect(needsCoreCollection(250 + REUSE_COLLECT_FROM_MB, 250)).toBe(true);
    expect(needsCoreCollection(250 + REUSE_MEMORY_GROWTH_MB + 1, 250)).toBe(true);
    expect(needsCoreCollection(undefined, 250)).toBe(true);
    expect(needsCoreCollection(250, undefined)).toBe(true);
    expect(needsCoreCollection(260, 250, 10)).toBe(true);
  });

  it("a reading that stays below the collection's threshold can never be retired by the memory rule", () => {
    for (const grown of [0, 10, REUSE_COLLECT_FROM_MB - 1])
      expect(resetVerdict(report({ memoryMb: 200 + grown, firstMemoryMb: 200 })).clean).toBe(true);
  });
});
