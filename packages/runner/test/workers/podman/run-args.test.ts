import { describe, expect, it } from "vitest";
import { EXEC_ONLY_INIT } from "../../../src/workers/exec-only-init.js";
import { OFFLINE_ENV } from "../../../src/workers/local/shape.js";
import {
  containerEnv,
  containerName,
  podmanExecArgs,
  podmanRunArgs,
} from "../../../src/workers/podman/run-args.js";

const spec = {
  runId: "r",
  taskId: "t",
  trajectoryId: "x-score",
  profile: "python" as const,
  workspace: "/host/fork/workspace",
  gateway: {},
  limits: { memoryMb: 512, pids: 64, wallClockMs: 60_000 },
  agent: false,
};

describe("containerName", () => {
  it("keeps podman's name alphabet and bounds the run and trajectory part", () => {
    expect(containerName({ ...spec, runId: "run 1/a", trajectoryId: "t:0" }, "abc123")).toBe(
      "flakegym-run_1_a-t_0-abc123",
    );
    expect(containerName({ ...spec, runId: "r".repeat(60), trajectoryId: "t" }, "x")).toBe(
      `flakegym-${"r".repeat(40)}-x`,
    );
  });
});

describe("containerEnv", () => {
  it("puts the deps' bins and the backend's prefix before the standard PATH; the spec's env wins", () => {
    const env = containerEnv(
      { depsDir: "/d", profile: "python", env: { LANG: "x" } },
      { VIRTUAL_ENV: "/deps/venv" },
      ["/opt/node/bin"],
    );
    const path = env.PATH!.split(":");
    expect(path.indexOf("/opt/node/bin")).toBeLessThan(path.indexOf("/usr/bin"));
    expect(path[0]).toMatch(/^\/deps/);
    expect(env).toMatchObject({
      HOME: "/sandbox-home",
      TMPDIR: "/tmp",
      LANG: "x",
      VIRTUAL_ENV: "/deps/venv",
    });
    for (const k of Object.keys(OFFLINE_ENV)) expect(env[k]).toBeDefined();
  });

  it("without deps the PATH is the standard one", () => {
    expect(containerEnv({ profile: "python" }, {}).PATH).toBe(
      "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    );
  });
});

describe("podmanExecArgs", () => {
  it("runs the command under `timeout -s KILL` (whole seconds, at least 1) in the workspace, CPU rlimit first", () => {
    const a = podmanExecArgs({ limits: { ...spec.limits, cpuSeconds: 30 } }, "c", "make test", {}, 1200);
    expect(a).toEqual([
      "exec",
      "--workdir",
      "/workspace",
      "c",
      "timeout",
      "-s",
      "KILL",
      "2",
      "/bin/sh",
      "-c",
      "ulimit -t 32 2>/dev/null; make test",
    ]);
    expect(podmanExecArgs(spec, "c", "true", {}, 10).slice(-5)).toEqual([
      "KILL",
      "1",
      "/bin/sh",
      "-c",
      "true",
    ]);
  });

  it("passes the exec's cwd and env", () => {
    const a = podmanExecArgs(spec, "c", "true", { cwd: "/tmp", env: { A: "1" } }, 5000);
    expect(a.slice(0, 5)).toEqual(["exec", "--workdir", "/tmp", "--env", "A=1"]);
  });
});

describe("podmanRunArgs' PID 1", () => {
  const o = { name: "n", image: "i", runtime: "runc", binds: [], tmpSizeMb: 64, env: {}, user: "0:0" };
  it("an exec-only container runs the shared init after its image; an agent's command replaces it", () => {
    expect(podmanRunArgs(spec, o).slice(-4)).toEqual(["i", ...EXEC_ONLY_INIT]);
    expect(EXEC_ONLY_INIT[2]).toMatch(
      /^trap '' HUP INT QUIT .*TERM .*; while :; do sleep 86400 & wait \$!; done$/,
    );
    expect(
      podmanRunArgs(spec, { ...o, command: ["/bin/node", "s.mjs"], foreground: true }).slice(-3),
    ).toEqual(["i", "/bin/node", "s.mjs"]);
  });
});

describe("podmanRunArgs", () => {
  const o = { name: "n", image: "i", runtime: "runc", binds: [], tmpSizeMb: 64, env: {}, user: "0:0" };
  it("binds the workspace again at the task's workdir (hidden files read-only there too) and its mounts read-only", () => {
    const a = podmanRunArgs(
      {
        ...spec,
        workspaceAlias: "/app",
        readOnlyFiles: [{ hostPath: "/host/hidden/0", path: "tests/t.py" }],
        containerMounts: [{ hostPath: "/cat/t/container/skills", path: "/skills" }],
      },
      o,
    );
    expect(a).toContain("/host/fork/workspace:/app:rw");
    expect(a.indexOf("/host/hidden/0:/app/tests/t.py:ro")).toBeGreaterThan(
      a.indexOf("/host/fork/workspace:/app:rw"),
    );
    expect(a).toContain("/cat/t/container/skills:/skills:ro");
  });
  it("binds a scoring worker's hidden test files read-only at their workspace paths; refuses a path leaving the workspace", () => {
    const a = podmanRunArgs(
      { ...spec, readOnlyFiles: [{ hostPath: "/host/hidden/0", path: "tests/t.py" }] },
      o,
    );
    expect(a).toContain("/host/hidden/0:/workspace/tests/t.py:ro");
    expect(a.indexOf("/host/hidden/0:/workspace/tests/t.py:ro")).toBeGreaterThan(
      a.indexOf("/host/fork/workspace:/workspace:rw"),
    );
    expect(podmanRunArgs(spec, o).join(" ")).not.toContain(":ro");
    for (const path of ["../etc/passwd", "/etc/passwd", "tests//t.py", "a:b"])
      expect(() => podmanRunArgs({ ...spec, readOnlyFiles: [{ hostPath: "/h", path }] }, o)).toThrow(
        /read-only file path/,
      );
  });
});
