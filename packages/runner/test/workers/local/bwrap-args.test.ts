import { describe, expect, it } from "vitest";
import { buildBwrapArgs, mountPointsIn } from "../../../src/workers/local/bwrap-args.js";
import { asInitShape } from "../../../src/workers/local/exec.js";
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
