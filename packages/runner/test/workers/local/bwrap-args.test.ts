import { describe, expect, it } from "vitest";
import {
  apartIdMap,
  apartPrefix,
  buildBwrapArgs,
  mountPointsIn,
  openParents,
  SCORER_CAPS,
  SCORER_HOST_UID,
} from "../../../src/workers/local/bwrap-args.js";
import { apartRunner, asInitShape, killedFromOutside } from "../../../src/workers/local/exec.js";
import { wrapCommand } from "../../../src/workers/local/sandbox.js";

const spec = {
  workspace: "/host/fork/workspace",
  workspaceDest: "/workspace",
  homeDest: "/sandbox-home",
  tmpSizeMb: 64,
  binds: [
    { src: "/host/rust", dest: "/opt/rust" },
    { src: "/host/gw.sock", dest: "/run/flakegym/gateway.sock" },
  ],
  env: { PATH: "/usr/bin", HOME: "/sandbox-home" },
  cwd: "/workspace",
  uid: 1000,
  gid: 1000,
  hostname: "flakegym",
  network: "none" as const,
};

function pairs(args: string[], flag: string): string[][] {
  const out: string[][] = [];
  args.forEach((a, i) => {
    if (a === flag) out.push(args.slice(i + 1, i + 3));
  });
  return out;
}

describe("buildBwrapArgs", () => {
  const args = buildBwrapArgs(spec);
  it("unshares every namespace, drops capabilities, dies with its parent", () => {
    for (const f of [
      "--unshare-user",
      "--unshare-pid",
      "--unshare-net",
      "--unshare-ipc",
      "--unshare-uts",
      "--die-with-parent",
      "--new-session",
      "--disable-userns",
    ]) {
      expect(args).toContain(f);
    }
    expect(args.join(" ")).toContain("--cap-drop ALL");
    expect(args.join(" ")).toContain("--clearenv");
  });
  it("gives /dev/shm its own tmpfs, mode 1777, after /dev (bwrap's own is root's, 755)", () => {
    const at = args.indexOf("/dev");
    expect(args.slice(at - 1, at + 7)).toEqual([
      "--dev",
      "/dev",
      "--perms",
      "1777",
      "--size",
      String(64 * 1024 * 1024),
      "--tmpfs",
      "/dev/shm",
    ]);
  });
  it("binds the system and toolchain read-only and only the workspace writable", () => {
    expect(pairs(args, "--ro-bind")).toContainEqual(["/usr", "/usr"]);
    expect(pairs(args, "--ro-bind")).toContainEqual(["/host/rust", "/opt/rust"]);
    expect(pairs(args, "--ro-bind")).toContainEqual(["/host/gw.sock", "/run/flakegym/gateway.sock"]);
    expect(pairs(args, "--bind")).toEqual([["/host/fork/workspace", "/workspace"]]);
    // the root is remounted read-only after every mount is in place
    expect(args.indexOf("--remount-ro")).toBeGreaterThan(args.lastIndexOf("--bind"));
    expect(args.join(" ")).toContain(`--size ${64 * 1024 * 1024} --tmpfs /tmp`);
    expect(args.join(" ")).toContain(`--size ${64 * 1024 * 1024} --tmpfs /sandbox-home`);
  });
  it("binds read-only files inside the workspace after the workspace itself (the scoring worker's hidden tests)", () => {
    const a = buildBwrapArgs({
      ...spec,
      workspaceBinds: [{ src: "/host/hidden/0", dest: "/workspace/tests/t.py" }],
    });
    expect(pairs(a, "--ro-bind")).toContainEqual(["/host/hidden/0", "/workspace/tests/t.py"]);
    expect(a.lastIndexOf("/host/hidden/0")).toBeGreaterThan(a.indexOf("/host/fork/workspace"));
    expect(pairs(a, "--bind")).toEqual([["/host/fork/workspace", "/workspace"]]);
  });
  it("makes the command PID 1 only when asked (a scoring exec: no init of bwrap's holds its stdout)", () => {
    expect(buildBwrapArgs(spec)).not.toContain("--as-pid-1");
    expect(buildBwrapArgs({ ...spec, asPid1: true })).toContain("--as-pid-1");
    expect(asInitShape({ bwrap: spec, rlimits: {} }, true).bwrap?.asPid1).toBe(true);
    expect(asInitShape({ bwrap: spec, rlimits: {} }, false).bwrap?.asPid1).toBeUndefined();
  });

  it("apart (a scoring exec of a root runner): two users, the scorer's capabilities, searchable mount points", () => {
    const root = { uid: 0, gid: 0 };
    const shape = asInitShape({ bwrap: spec, rlimits: {} }, true, root);
    expect(shape.bwrap?.apart).toEqual({ runnerUid: 0, runnerGid: 0 });
    // an agent's exec is never apart, nor a runner that is not root
    expect(asInitShape({ bwrap: spec, rlimits: {} }, false, root).bwrap?.apart).toBeUndefined();
    expect(asInitShape({ bwrap: spec, rlimits: {} }, true).bwrap?.apart).toBeUndefined();
    const a = buildBwrapArgs({
      ...shape.bwrap!,
      workspaceBinds: [{ src: "/host/hidden/0", dest: "/workspace/tests/unit/t.py" }],
    });
    // the prefix's user namespace, not one of bwrap's: no --unshare-user, --uid or --disable-userns
    for (const f of ["--unshare-user", "--uid", "--gid", "--disable-userns"]) expect(a).not.toContain(f);
    expect(pairs(a, "--cap-add").map((p) => p[0])).toEqual([...SCORER_CAPS]);
    const dirs = pairs(a, "--dir").map((p) => p[0]);
    for (const d of ["/etc", "/opt", "/run", "/run/flakegym", "/workspace/tests", "/workspace/tests/unit"])
      expect(dirs).toContain(d);
    // made before the binds below them, the workspace's after the workspace is bound
    expect(a.indexOf("/etc")).toBeLessThan(a.indexOf("/etc/alternatives"));
    expect(a.indexOf("/workspace/tests")).toBeGreaterThan(a.indexOf("/host/fork/workspace"));
    expect(a.indexOf("/workspace/tests")).toBeLessThan(a.indexOf("/host/hidden/0"));
    // searchable; in the workspace writable by the code too (a mount point there stays unremovable)
    const perms = (d: string) => a[a.indexOf(d) - 2];
    expect(perms("/etc")).toBe("0755");
    expect(perms("/workspace/tests")).toBe("0777");
    // the host command: the prefix first, then bwrap
    const line = wrapCommand({ ...shape, bwrapPath: "bwrap" }, ["sh"]);
    expect(line.args.slice(0, 3)).toEqual(apartPrefix(1000, 1000, 0, 0).slice(1, 4));
    expect(line.args).toContain("bwrap");
  });
  it("apart's map: the scorer root of the namespace as a host user of its own, the sandbox user the runner", () => {
    expect(apartIdMap(1000, 0)).toBe(`0 ${SCORER_HOST_UID} 1\n1000 0 1\n`);
    expect(apartPrefix(1000, 1000, 0, 0)[2]).toContain("unshare --user --keep-caps");
    expect(openParents({ ...spec, workspaceBinds: [] }, "workspace")).toEqual([]);
    // root runners only, where the scorer's host user exists, unless one user is asked for
    const all = "         0          0 4294967295\n";
    expect(apartRunner(0, 0, all, {})).toEqual({ uid: 0, gid: 0 });
    expect(apartRunner(1000, 1000, all, {})).toBeUndefined();
    expect(apartRunner(0, 0, all, { FLAKEGYM_SCORING_USERS: "one" })).toBeUndefined();
    expect(apartRunner(0, 0, "0 1000 1\n", {})).toBeUndefined();
  });

  it("a sandbox killed while a limit of the worker's fired was not killed from outside", () => {
    expect(killedFromOutside(true, undefined)).toBe(true);
    for (const l of ["memory", "cpu_time", "pids", "disk", "wall_clock"] as const)
      expect(killedFromOutside(true, l)).toBe(false);
    expect(killedFromOutside(false, undefined)).toBe(false);
  });

  it("shares the network only when asked", () => {
    expect(buildBwrapArgs({ ...spec, network: "host" })).not.toContain("--unshare-net");
  });
  it("sets exactly the given environment", () => {
    expect(pairs(args, "--setenv")).toEqual([
      ["PATH", "/usr/bin"],
      ["HOME", "/sandbox-home"],
    ]);
  });
});

describe("wrapCommand", () => {
  it("joins the cgroup first, then prlimit, then bwrap", () => {
    const cg = { kind: "v1", procsFiles: ["/sys/fs/cgroup/pids/x/cgroup.procs"] } as never;
    const line = wrapCommand(
      { bwrap: spec, cgroup: cg, rlimits: { cpuSeconds: 5, fileSizeMb: 1 }, bwrapPath: "/usr/bin/bwrap" },
      ["/bin/sh", "-c", "true"],
    );
    expect(line.command).toBe("/bin/sh");
    expect(line.env.FLAKEGYM_CGROUP_PROCS).toBe("/sys/fs/cgroup/pids/x/cgroup.procs");
    const rest = line.args.slice(3);
    expect(rest.slice(0, 4)).toEqual(["prlimit", "--cpu=5", `--fsize=${1024 * 1024}`, "--"]);
    expect(rest[4]).toBe("/usr/bin/bwrap");
    expect(rest.slice(-4)).toEqual(["--", "/bin/sh", "-c", "true"]);
  });
  it("without bwrap (unsafe) runs the command with only the given environment", () => {
    const line = wrapCommand({ bwrap: undefined, rlimits: {} }, ["make"], { PATH: "/usr/bin" });
    expect([line.command, ...line.args]).toEqual(["env", "-i", "PATH=/usr/bin", "make"]);
  });
});

describe("a built root filesystem as the system", () => {
  const root = {
    dir: "/cache/rootfs/k",
    entries: [
      { name: "bin", kind: "symlink" as const, target: "usr/bin" },
      { name: "etc", kind: "dir" as const },
      { name: "entrypoint.sh", kind: "file" as const },
      { name: "opt", kind: "dir" as const },
      { name: "proc", kind: "dir" as const },
      { name: "tmp", kind: "dir" as const },
      { name: "usr", kind: "dir" as const },
    ],
  };
  const args = buildBwrapArgs({ ...spec, systemRoot: root });

  it("binds the tree's entries read-only in place of this machine's /usr, keeps its symlinks, and makes /proc, /dev, /tmp itself", () => {
    expect(pairs(args, "--ro-bind")).toEqual(
      expect.arrayContaining([
        ["/cache/rootfs/k/etc", "/etc"],
        ["/cache/rootfs/k/entrypoint.sh", "/entrypoint.sh"],
        ["/cache/rootfs/k/usr", "/usr"],
      ]),
    );
    expect(pairs(args, "--ro-bind").some(([src]) => src === "/usr")).toBe(false);
    expect(pairs(args, "--symlink")).toContainEqual(["usr/bin", "/bin"]);
    expect(pairs(args, "--ro-bind").some(([, d]) => d === "/proc" || d === "/tmp")).toBe(false);
    expect(args).toContain("--remount-ro");
  });

  it("names the mount points to make inside the tree: only binds under its directories", () => {
    expect(
      mountPointsIn(root, ["/opt/rust", "/run/flakegym/gateway.sock", "/workspace", "/etc/passwd", "/tmp/x"]),
    ).toEqual(["opt/rust", "etc/passwd"]);
  });
});
