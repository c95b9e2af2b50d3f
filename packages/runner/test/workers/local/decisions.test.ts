import { describe, expect, it } from "vitest";
import {
  agentExitOf,
  aliasBindsOf,
  bootLimitsOf,
  cpuOverOf,
  diskCheckDue,
  execArgvOf,
  memoryExitOf,
  POOL_BOOT_CPU_SECONDS,
  policyBaseUrlOf,
  readOnlyBindsOf,
  workerBindsOf,
  workerIdOf,
} from "../../../src/workers/local/decisions.js";
import { SANDBOX_GATEWAY_PORT, SANDBOX_GATEWAY_SOCKET } from "../../../src/workers/local/shape.js";
import type { WorkerSpec } from "../../../src/workers/types.js";

const spec = (over: Partial<WorkerSpec> = {}): WorkerSpec => ({
  runId: "run/1",
  taskId: "t",
  trajectoryId: "traj 7",
  profile: "python",
  workspace: "/w/a",
  gateway: { socketPath: "/s/gw.sock", url: "http://gateway:9/t/a/v1/" },
  limits: { memoryMb: 512, pids: 64, cpuSeconds: 30, wallClockMs: 60_000 },
  agent: true,
  ...over,
});

describe("workerIdOf", () => {
  it("names a cold worker by run and trajectory, a pooled one by run and profile, with only safe characters", () => {
    expect(workerIdOf(spec(), false, "abc123")).toBe("run_1-traj_7-abc123");
    expect(workerIdOf(spec(), true, "abc123")).toBe("pool-run_1-python-abc123");
  });
  it("keeps the named part to 40 characters (a cgroup and dir name)", () => {
    const id = workerIdOf(spec({ trajectoryId: "x".repeat(100) }), false, "ffffff");
    expect(id).toHaveLength(40 + "-ffffff".length);
  });
});

describe("workerBindsOf", () => {
  const dirs = { config: "/st/config", sock: "/st/sock" };
  it("binds an agent's config and socket dirs writable at the same path, and the gateway socket", () => {
    expect(workerBindsOf(spec(), dirs)).toEqual([
      { src: "/st/config", dest: "/st/config", rw: true },
      { src: "/st/sock", dest: "/st/sock", rw: true },
      { src: "/s/gw.sock", dest: SANDBOX_GATEWAY_SOCKET },
    ]);
  });
  it("gives an exec-only worker the gateway socket only, and nothing without one", () => {
    expect(workerBindsOf(spec({ agent: false }), dirs)).toEqual([
      { src: "/s/gw.sock", dest: SANDBOX_GATEWAY_SOCKET },
    ]);
    expect(workerBindsOf(spec({ agent: false, gateway: {} }), dirs)).toEqual([]);
  });
  it("binds the snapshot's interpreter prefix read-only at its own path, for agent and scoring workers", () => {
    const py = "/opt/pythons/3.9.18";
    expect(workerBindsOf(spec({ hostBinds: [py] }), dirs)).toContainEqual({ src: py, dest: py });
    expect(workerBindsOf(spec({ agent: false, gateway: {}, hostBinds: [py] }), dirs)).toEqual([
      { src: py, dest: py },
    ]);
  });
});

describe("readOnlyBindsOf", () => {
  it("binds each read-only file over its path inside /workspace", () => {
    const s = spec({ readOnlyFiles: [{ path: "tests/test_a.py", hostPath: "/h/a" }] });
    expect(readOnlyBindsOf(s, (p) => p)).toEqual([{ src: "/h/a", dest: "/workspace/tests/test_a.py" }]);
    expect(readOnlyBindsOf(spec(), (p) => p)).toEqual([]);
  });
});

describe("aliasBindsOf", () => {
  it("binds the workspace again at the task's workdir, with the read-only files over it there too", () => {
    const s = spec({ workspaceAlias: "/app", readOnlyFiles: [{ path: "tests/t.py", hostPath: "/h/t" }] });
    expect(aliasBindsOf(s, "/w/a", (p) => p)).toEqual([
      { src: "/w/a", dest: "/app", rw: true },
      { src: "/h/t", dest: "/app/tests/t.py" },
    ]);
    expect(aliasBindsOf(spec(), "/w/a", (p) => p)).toEqual([]);
  });
  it("shows a task's mounts read-only at their container paths", () => {
    const s = spec({
      agent: false,
      gateway: {},
      containerMounts: [{ hostPath: "/cat/t/container/skills", path: "/skills" }],
    });
    expect(workerBindsOf(s, { config: "/c", sock: "/s" })).toEqual([
      { src: "/cat/t/container/skills", dest: "/skills" },
    ]);
  });
});

describe("bootLimitsOf", () => {
  it("adds the boot and idle allowance to a pooled worker's CPU backstop only", () => {
    const l = spec().limits;
    expect(bootLimitsOf(l, true).cpuSeconds).toBe(30 + POOL_BOOT_CPU_SECONDS);
    expect(bootLimitsOf(l, false)).toBe(l);
    const noCpu = { memoryMb: 1, pids: 1, wallClockMs: 1 };
    expect(bootLimitsOf(noCpu, true)).toBe(noCpu);
  });
});

describe("cpuOverOf", () => {
  const limits = spec().limits;
  const usage = (s: number) => ({ cpuUsec: s * 1e6, memoryBytes: 0, pids: 1 });
  it("ends an assigned worker whose CPU since assignment reached the budget", () => {
    expect(cpuOverOf({ assigned: true, usage: usage(45), cpuBaseUsec: 15e6, limits })).toEqual({
      reason: "cpu_time",
      detail: "used 30.0 s of CPU (limit 30 s)",
    });
  });
  it("does not count a pooled worker's boot, an unassigned worker, no cgroup or no budget", () => {
    expect(cpuOverOf({ assigned: true, usage: usage(44), cpuBaseUsec: 15e6, limits })).toBeUndefined();
    expect(cpuOverOf({ assigned: false, usage: usage(99), cpuBaseUsec: 0, limits })).toBeUndefined();
    expect(cpuOverOf({ assigned: true, usage: undefined, cpuBaseUsec: 0, limits })).toBeUndefined();
    const noCpu = { memoryMb: 1, pids: 1, wallClockMs: 1 };
    expect(cpuOverOf({ assigned: true, usage: usage(99), cpuBaseUsec: 0, limits: noCpu })).toBeUndefined();
  });
});

describe("diskCheckDue", () => {
  it("checks an assigned worker's disk at most every five watchdog intervals", () => {
    expect(diskCheckDue(true, 5001, 0, 1000)).toBe(true);
    expect(diskCheckDue(true, 5000, 0, 1000)).toBe(false);
    expect(diskCheckDue(false, 99_999, 0, 1000)).toBe(false);
  });
});

describe("agentExitOf", () => {
  const limits = spec().limits;
  it("calls an agent the OOM killer picked the memory limit", () => {
    expect(agentExitOf({ code: 137 }, true, limits)).toEqual({
      reason: "memory",
      detail: "memory limit 512 MiB reached (the cgroup's memory events) (the agent was killed)",
    });
    expect(memoryExitOf(limits)).toEqual({
      reason: "memory",
      detail: "memory limit 512 MiB reached (the cgroup's memory events)",
    });
  });
  it("names the disk, not the memory, when the workspace's tmpfs files hold at least half the limit (memory.stat shmem)", () => {
    const mib = 1024 * 1024;
    const withDisk = { ...limits, diskMb: 2048 };
    expect(memoryExitOf(withDisk, false, 400 * mib)).toEqual({
      reason: "disk",
      detail:
        "the workspace's files filled the worker's memory: 400 MiB of its 512 MiB memory limit are files on its tmpfs (the cgroup's memory.stat shmem), before its 2048 MiB disk limit",
    });
    expect(agentExitOf({ code: 137 }, true, withDisk, undefined, 256 * mib).reason).toBe("disk");
    // a process's own heap with a few files beside it stays the memory limit, the files named
    expect(memoryExitOf(withDisk, false, 10 * mib)).toEqual({
      reason: "memory",
      detail: "memory limit 512 MiB reached (the cgroup's memory events, 10 MiB of it files on tmpfs)",
    });
  });
  it("calls any other exit of the agent a crash, with its code and detail", () => {
    expect(agentExitOf({ code: 1, detail: "boom" }, false, limits)).toEqual({
      reason: "crashed",
      detail: "agent exited (code 1): boom",
    });
    expect(agentExitOf({ code: null }, false, limits).detail).toBe("agent exited (code null)");
  });
});

describe("execArgvOf", () => {
  it("runs the command by sh in the directory given as $0, with the exec's env added", () => {
    expect(execArgvOf("ls", "/workspace", { A: "1" })).toEqual([
      "/usr/bin/env",
      "A=1",
      "/bin/sh",
      "-c",
      'cd "$0" && ls',
      "/workspace",
    ]);
    expect(execArgvOf("ls", "/x")).toEqual(["/usr/bin/env", "/bin/sh", "-c", 'cd "$0" && ls', "/x"]);
  });
});

describe("policyBaseUrlOf", () => {
  it("is the supervisor's loopback forwarder plus the gateway URL's route", () => {
    expect(policyBaseUrlOf(spec())).toBe(`http://127.0.0.1:${SANDBOX_GATEWAY_PORT}/t/a/v1`);
    expect(policyBaseUrlOf(spec({ gateway: { socketPath: "/s" } }))).toBe(
      `http://127.0.0.1:${SANDBOX_GATEWAY_PORT}/v1`,
    );
    expect(policyBaseUrlOf(spec({ gateway: { url: "not a url" } }))).toBe(
      `http://127.0.0.1:${SANDBOX_GATEWAY_PORT}/v1`,
    );
    expect(policyBaseUrlOf(spec({ gateway: { url: "http://g:1/" } }))).toBe(
      `http://127.0.0.1:${SANDBOX_GATEWAY_PORT}`,
    );
  });
});
