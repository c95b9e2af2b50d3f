import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildBwrapArgs, mayRunApart } from "../../../src/workers/local/bwrap-args.js";
import {
  CONTAINER_CAPS,
  CONTAINER_PATH,
  containerEnv,
  containerPrefix,
  containerRootOf,
  imageEnvOf,
  isCachePath,
  isOverlayMount,
  mountContainerRoot,
  overlayMountArgs,
  overlayPathProblem,
  unmountContainerRoot,
  upperChanges,
} from "../../../src/workers/local/container-root.js";
import { findBwrap } from "../../../src/workers/local/shape.js";

const spec = {
  workspace: "/host/ws",
  workspaceDest: "/workspace",
  homeDest: "/sandbox-home",
  tmpSizeMb: 64,
  binds: [{ src: "/host/gw.sock", dest: "/run/flakegym/gateway.sock" }],
  workspaceBinds: [{ src: "/host/ws", dest: "/app", rw: true }],
  env: { PATH: "/usr/bin" },
  cwd: "/app",
  uid: 0,
  gid: 0,
  hostname: "flakegym",
  network: "none" as const,
  container: { root: "/state/root/merged", caps: CONTAINER_CAPS },
};

describe("the container's bwrap arguments", () => {
  const args = buildBwrapArgs(spec);
  const line = args.join(" ");
  it("bind the overlay writable at / and make no user namespace of their own (the prefix's)", () => {
    expect(line).toContain("--bind /state/root/merged / --proc /proc --dev /dev");
    expect(args).not.toContain("--unshare-user");
    expect(args).not.toContain("--remount-ro");
    expect(args).not.toContain("--ro-bind /usr /usr");
  });
  it("drop every capability but the container's set, and keep the other namespaces", () => {
    expect(line).toContain("--cap-drop ALL");
    expect(args.filter((a) => a === "--cap-add")).toHaveLength(CONTAINER_CAPS.length);
    expect(line).not.toMatch(/CAP_(SYS_ADMIN|NET_RAW|NET_ADMIN|MKNOD|SYS_PTRACE)/);
    for (const f of ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--die-with-parent"])
      expect(args).toContain(f);
  });
  it("start in the WORKDIR, with the workspace at it", () => {
    expect(line).toContain("--bind /host/ws /app");
    expect(line).toContain("--chdir /app --clearenv");
  });
});

describe("overlay mount options", () => {
  it("name the tree below and the sandbox's dirs above", () => {
    const r = containerRootOf("/cache/tree", "/state/root");
    expect(overlayMountArgs(r)).toEqual([
      "-t",
      "overlay",
      "overlay",
      "-o",
      "lowerdir=/cache/tree,upperdir=/state/root/upper,workdir=/state/root/work",
      "/state/root/merged",
    ]);
  });
  it("refuse a path the options cannot name, saying what to do", () => {
    expect(overlayPathProblem("/a,b")).toMatch(/cannot name: move the flakegym cache/);
    expect(overlayPathProblem("/a:b")).toBeDefined();
    expect(overlayPathProblem("rel")).toMatch(/not an absolute path/);
    expect(overlayPathProblem("/cache/harbor-rootfs/abc")).toBeUndefined();
  });
  it("an overlay is told from another mount at the same point by mountinfo", () => {
    const ovl = "36 25 0:32 / /s/merged rw,relatime shared:1 - overlay overlay rw,lowerdir=/t";
    const tmp = "36 25 0:32 / /s/merged rw,relatime shared:1 - tmpfs tmpfs rw";
    expect(isOverlayMount(ovl, "/s/merged")).toBe(true);
    expect(isOverlayMount(tmp, "/s/merged")).toBe(false);
    expect(isOverlayMount(ovl, "/s/merged2")).toBe(false);
  });
});

describe("what a container changed in its system", () => {
  it("leaves out caches no test grades", () => {
    for (const p of [
      "/root/.cache/go-build/00/ab-a",
      "/usr/lib/python3/x/__pycache__/m.pyc",
      "/var/cache/apt/a.bin",
      "/a/b.pyc",
    ])
      expect(isCachePath(p)).toBe(true);
    for (const p of ["/etc/sudoers.d/x", "/root/.ssh/authorized_keys", "/etc/redis_secret"])
      expect(isCachePath(p)).toBe(false);
  });
});

describe("the container's environment", () => {
  it("is the image's ENV over the sandbox's, root's identity, Docker's PATH unless the image sets one", () => {
    const base = { PIP_NO_INDEX: "1", HOME: "/sandbox-home", PATH: "/x" };
    expect(containerEnv(base, { APP_MODE: "test" })).toEqual({
      PIP_NO_INDEX: "1",
      HOME: "/root",
      USER: "root",
      LOGNAME: "root",
      PATH: CONTAINER_PATH,
      APP_MODE: "test",
    });
    expect(containerEnv(base, { PATH: "/opt/venv/bin:/usr/bin" }).PATH).toBe("/opt/venv/bin:/usr/bin");
    expect(containerEnv(base, { A: "image" }, { A: "spec" }).A).toBe("spec");
  });
  it("is read from the build's record, and a record that is not one is named", async () => {
    const d = await mkdtemp(join(tmpdir(), "fg-imgenv-"));
    try {
      expect(await imageEnvOf(d, "mark.json")).toEqual({});
      await writeFile(join(d, "mark.json"), JSON.stringify({ env: { A: "1" } }));
      expect(await imageEnvOf(d, "mark.json")).toEqual({ A: "1" });
      await writeFile(join(d, "mark.json"), JSON.stringify({ env: { A: 1 } }));
      await expect(imageEnvOf(d, "mark.json")).rejects.toThrow(
        /mark\.json has an env that is not names to strings/,
      );
      await writeFile(join(d, "mark.json"), "{");
      await expect(imageEnvOf(d, "mark.json")).rejects.toThrow(/is not JSON .*import the task again/);
    } finally {
      await rm(d, { recursive: true, force: true });
    }
  });
});

const root = process.geteuid?.() === 0;
const bwrap = findBwrap();

/** A tree of the image's shape: its own /etc (users), this machine's /usr bound in by the test. */
async function tinyTree(dir: string): Promise<void> {
  await mkdir(join(dir, "etc"), { recursive: true });
  await mkdir(join(dir, "usr"));
  for (const [l, t] of [
    ["bin", "usr/bin"],
    ["sbin", "usr/sbin"],
    ["lib", "usr/lib"],
    ["lib64", "usr/lib64"],
  ] as const)
    await symlink(t, join(dir, l));
  await writeFile(join(dir, "etc/passwd"), "root:x:0:0:root:/root:/bin/bash\n");
  await writeFile(join(dir, "etc/group"), "root:x:0:\n");
  await writeFile(join(dir, "etc/keep"), "from the image\n");
}

if (!root || !bwrap)
  console.log(
    `skipped the real container sandbox: it needs root with bubblewrap (mounts an overlay, maps 65536 users); here ${root ? "no bwrap" : "not root"}`,
  );
describe.skipIf(!root || !bwrap)(
  "a container sandbox, for real (skipped unless root with bubblewrap: mounts an overlay, maps 65536 users)",
  () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), "fg-container-"));
      await tinyTree(join(dir, "tree"));
      await mkdir(join(dir, "ws"));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it("is root with the image's users, writes only its own layer, runs a 2nd uid, makes no user namespace", async () => {
      const r = containerRootOf(join(dir, "tree"), join(dir, "state"));
      await mountContainerRoot(r);
      try {
        const args = buildBwrapArgs({
          ...spec,
          workspace: join(dir, "ws"),
          workspaceBinds: [],
          workspaceDest: "/app",
          binds: [{ src: "/usr", dest: "/usr" }],
          container: { root: r.merged, caps: CONTAINER_CAPS },
        });
        const script = [
          "id -u",
          "rm /etc/keep && echo x > /etc/hello",
          "echo 'w:x:59999:59999::/:/bin/sh' >> /etc/passwd",
          "setpriv --reuid=59999 --regid=59999 --clear-groups id -un",
          "touch /app/made && chown 59999:59999 /app/made",
          "unshare -U true 2>/dev/null && echo userns-made || echo no-userns",
        ].join(" && ");
        const [cmd, ...pre] = containerPrefix();
        const p = spawnSync(cmd!, [...pre, bwrap!, ...args, "--", "/bin/sh", "-c", script], {
          encoding: "utf8",
          timeout: 30_000,
        });
        expect(p.stderr).toBe("");
        expect(p.stdout.trim().split("\n")).toEqual(["0", "w", "no-userns"]);
        // the tree is untouched; the change is in the sandbox's upper layer
        expect(await readFile(join(dir, "tree/etc/keep"), "utf8")).toBe("from the image\n");
        expect(existsSync(join(dir, "tree/etc/hello"))).toBe(false);
        expect(await readFile(join(r.upper, "etc/hello"), "utf8")).toBe("x\n");
        // what it changed in the system, by name: a removal is a whiteout
        expect(await upperChanges(r.upper)).toEqual(["/etc/hello", "/etc/keep (removed)", "/etc/passwd"]);
        // the workspace is the host's dir, the file the 2nd user's
        const own = spawnSync("stat", ["-c", "%u", join(dir, "ws/made")], { encoding: "utf8" });
        expect(own.stdout.trim()).toBe("59999");
      } finally {
        await unmountContainerRoot(r);
      }
      expect(isOverlayMount(await readFile("/proc/self/mountinfo", "utf8"), r.merged)).toBe(false);
      expect(existsSync(r.upper)).toBe(false);
    });
  },
);

describe("who a sandbox's users are (mayRunApart: the agent launcher's and scoring's one predicate)", () => {
  it("a Harbor container is one user's (Harbor's verifier shares the agent's container); any other sandbox may run apart", () => {
    expect(mayRunApart({ container: { root: "/r", caps: [] } })).toBe(false);
    expect(mayRunApart({})).toBe(true);
  });
});
