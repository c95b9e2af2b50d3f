import { execFileSync } from "node:child_process";
import { mkdir, readdir, readFile, rm, symlink, truncate, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  commitWorkspace,
  planEntry,
  preWalk,
  readContained,
  readHead,
  sealBase,
  workspaceDiff,
} from "../../supervisor/workspace-diff.mjs";
import { makeTempDir } from "../helpers.js";

const git = (cwd: string, ...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@e", ...args], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, GIT_CONFIG_GLOBAL: "/dev/null", GIT_CONFIG_NOSYSTEM: "1" },
  }).trim();

/** A pristine snapshot repository and a fork of it (the agent's workspace). */
async function scene(root: string) {
  const snap = join(root, "snap");
  await mkdir(join(snap, "d"), { recursive: true });
  await writeFile(join(snap, "a.txt"), "a\n");
  await writeFile(join(snap, "d", "f.txt"), "f\n");
  git(snap, "init", "-q", "-b", "main");
  git(snap, "add", "-A");
  git(snap, "commit", "-qm", "base");
  const ws = join(root, "ws");
  execFileSync("cp", ["-a", snap, ws]);
  return { ws, base: git(snap, "rev-parse", "HEAD"), baseObjects: join(snap, ".git", "objects") };
}

const limits = { maxFileBytes: 100, maxTotalBytes: 150, budget: 150 };

describe("planEntry", () => {
  it("updates files and links, removes vanished tracked paths, keeps what git must not read", () => {
    const tracked = { mode: "100644" };
    expect(planEntry("a", tracked, { kind: "file", size: 10 }, limits)).toEqual({
      action: "update",
      bytes: 10,
    });
    expect(planEntry("a", undefined, { kind: "symlink" }, limits)).toEqual({ action: "update", bytes: 0 });
    for (const kind of ["missing", "beyond-symlink", "dir"] as const)
      expect(planEntry("a", tracked, { kind }, limits)).toEqual({ action: "remove" });
    expect(planEntry("a", tracked, { kind: "fifo" }, limits)).toEqual({
      action: "keep",
      reason: "a fifo, not a file",
    });
    expect(planEntry("big", undefined, { kind: "file", size: 101 }, limits)).toEqual({
      action: "keep",
      reason: "larger than 100 bytes (101)",
    });
    expect(planEntry("b", undefined, { kind: "file", size: 90 }, { ...limits, budget: 80 })).toEqual({
      action: "keep",
      reason: "over the diff's total size cap of 150 bytes",
    });
    expect(planEntry("sub/", undefined, { kind: "dir" }, limits)).toEqual({
      action: "keep",
      reason: "nested git repository (not collected)",
    });
    expect(planEntry("mod", { mode: "160000" }, { kind: "dir" }, limits)).toEqual({ action: "keep" });
  });
});

describe("workspaceDiff", () => {
  it("takes deletions, type changes and non-UTF-8 names against the base, within the size caps", async () => {
    await using tmp = await makeTempDir();
    const { ws, base, baseObjects } = await scene(tmp.path);
    await rm(join(ws, "d"), { recursive: true });
    await writeFile(join(ws, "d"), "now a file\n"); // a tracked directory became a file
    await rm(join(ws, "a.txt"));
    await mkdir(join(ws, "a.txt")); // a tracked file became a directory
    await writeFile(join(ws, "a.txt", "in.txt"), "inside\n");
    await writeFile(Buffer.from(`${ws}/caf\xe9.txt`, "latin1"), "latin1 name\n");
    await writeFile(join(ws, "big.bin"), Buffer.alloc(200, 1));
    const d = await workspaceDiff({ workspace: ws, baseCommit: base, baseObjects, maxFileBytes: 100 });
    expect(d.excluded).toEqual([{ path: "big.bin", reason: "larger than 100 bytes (200)" }]);
    const check = join(tmp.path, "check");
    execFileSync("cp", ["-a", join(tmp.path, "snap"), check]);
    await writeFile(join(tmp.path, "p.patch"), d.patch);
    git(check, "apply", "--binary", join(tmp.path, "p.patch"));
    expect(execFileSync("cat", ["d", "a.txt/in.txt"], { cwd: check, encoding: "utf8" })).toBe(
      "now a file\ninside\n",
    );
    const names = (await readdir(check, { encoding: "buffer" })).map((b) => b.toString("latin1"));
    expect(names).toContain("caf\xe9.txt");
    expect(names).not.toContain("big.bin");
  });

  it("refuses base objects that borrow from elsewhere, and a base they lack", async () => {
    await using tmp = await makeTempDir();
    const { ws, base, baseObjects } = await scene(tmp.path);
    await expect(
      workspaceDiff({ workspace: ws, baseCommit: "f".repeat(40), baseObjects }),
    ).rejects.toMatchObject({ code: "E_DIFF_BASE" });
    await writeFile(join(baseObjects, "info", "alternates"), "/etc\n");
    await expect(workspaceDiff({ workspace: ws, baseCommit: base, baseObjects })).rejects.toMatchObject({
      code: "E_DIFF_BASE",
      message: expect.stringContaining("info/alternates"),
    });
  });

  it("leaves nothing behind in the temp dir or the workspace", async () => {
    await using tmp = await makeTempDir();
    const { ws, base, baseObjects } = await scene(tmp.path);
    const scratch = join(tmp.path, "scratch");
    await mkdir(scratch);
    const before = git(ws, "status", "--porcelain", "--ignored");
    await workspaceDiff({ workspace: ws, baseCommit: base, baseObjects, scratchDir: scratch });
    expect(await readdir(scratch)).toEqual([]);
    expect(git(ws, "status", "--porcelain", "--ignored")).toBe(before);
  });
});

describe("preWalk", () => {
  it("refuses what would make git block or read outside, and lists FIFOs", async () => {
    await using tmp = await makeTempDir();
    const ws = join(tmp.path, "ws");
    await mkdir(join(ws, "a", "b"), { recursive: true });
    execFileSync("mkfifo", [join(ws, "a", "pipe")]);
    const far = Date.now() + 10_000;
    expect(await preWalk(ws, far)).toEqual([{ path: "a/pipe", reason: "a fifo, not a file" }]);
    const cases: [string, () => Promise<void>, RegExp][] = [
      [
        "fifo .gitattributes",
        async () => {
          execFileSync("mkfifo", [join(ws, "a", "b", ".gitattributes")]);
        },
        /not a regular file/,
      ],
      ["linked nested .git", () => symlink("/etc", join(ws, "a", ".git")), /neither a directory nor a file/],
      ["absolute gitfile", () => writeFile(join(ws, "a", ".git"), "gitdir: /etc\n"), /points outside/],
      ["escaping gitfile", () => writeFile(join(ws, "a", ".git"), "gitdir: ../../..\n"), /points outside/],
      [
        "nested HEAD link",
        async () => {
          await mkdir(join(ws, "a", ".git"));
          await symlink("/etc/hostname", join(ws, "a", ".git", "HEAD"));
        },
        /'a\/.git\/HEAD' is a symlink/,
      ],
    ];
    for (const [name, plant, message] of cases) {
      await plant();
      await expect(preWalk(ws, far), name).rejects.toMatchObject({ code: "E_DIFF_UNSAFE", message });
      await rm(join(ws, "a"), { recursive: true });
      await mkdir(join(ws, "a", "b"), { recursive: true });
    }
    // the workspace's own .git is never looked at, whatever it is
    await symlink("/etc", join(ws, ".git"));
    expect(await preWalk(ws, far)).toEqual([]);
  });
});

describe("readContained", () => {
  it("reads plain files and refuses links, FIFOs, oversize files and linked directories", async () => {
    await using tmp = await makeTempDir();
    const root = join(tmp.path, "root");
    await mkdir(join(root, "d"), { recursive: true });
    await writeFile(join(root, "d", "ok"), "fine");
    await writeFile(join(tmp.path, "secret"), "secret");
    await symlink(join(tmp.path, "secret"), join(root, "d", "link"));
    await symlink(tmp.path, join(root, "up"));
    execFileSync("mkfifo", [join(root, "d", "fifo")]);
    await truncate(join(root, "d", "ok"), 4);
    const r = readContained(root, "d/ok", { maxBytes: 10 });
    expect(r.kind === "file" && r.data.toString()).toBe("fine");
    expect(readContained(root, "d/link", { maxBytes: 10 })).toEqual({
      kind: "refused",
      reason: "a symbolic link",
    });
    expect(readContained(root, "up/secret", { maxBytes: 10 })).toEqual({
      kind: "refused",
      reason: "up is a symlink, not a directory",
    });
    expect(readContained(root, "d/fifo", { maxBytes: 10 })).toEqual({
      kind: "refused",
      reason: "a fifo, not a file",
    });
    expect(readContained(root, "d/ok", { maxBytes: 3 })).toEqual({
      kind: "refused",
      reason: "larger than 3 bytes (4)",
    });
    expect(readContained(root, "d/none", { maxBytes: 3 })).toEqual({ kind: "missing" });
    expect(readContained(root, "../secret", { maxBytes: 10 }).kind).toBe("refused");
  });
});

describe("readHead and sealBase", () => {
  it("read HEAD as data (loose and packed refs) and seal the base so history rewrites cannot lose it", async () => {
    await using tmp = await makeTempDir();
    const { ws, base } = await scene(tmp.path);
    expect(readHead(ws)).toBe(base);
    git(ws, "pack-refs", "--all");
    expect(readHead(ws)).toBe(base);
    git(ws, "checkout", "-q", "--detach");
    expect(readHead(ws)).toBe(base);
    const objects = await sealBase({
      sourceObjects: join(ws, ".git", "objects"),
      baseCommit: base,
      dir: join(tmp.path, "sealed.git"),
    });
    // the agent rewrites history and prunes: the sealed copy still has the base
    git(ws, "checkout", "-q", "--orphan", "x");
    git(ws, "commit", "-qm", "x");
    git(ws, "branch", "-D", "main");
    git(ws, "reflog", "expire", "--expire=now", "--all");
    git(ws, "gc", "-q", "--prune=now");
    await writeFile(join(ws, "a.txt"), "changed\n");
    const d = await workspaceDiff({ workspace: ws, baseCommit: base, baseObjects: objects });
    expect(d.patch.toString()).toContain("+changed");
    expect(readHead(join(tmp.path, "nowhere"))).toBeUndefined();
  });

  it("seal a shallow clone's base (dataset snapshots are depth-1 fetches)", async () => {
    await using tmp = await makeTempDir();
    const { ws } = await scene(tmp.path);
    await writeFile(join(ws, "a.txt"), "second\n");
    git(ws, "commit", "-qam", "second");
    const shallow = join(tmp.path, "shallow");
    git(tmp.path, "clone", "-q", "--depth", "1", `file://${ws}`, shallow);
    const base = git(shallow, "rev-parse", "HEAD");
    const objects = await sealBase({
      sourceObjects: join(shallow, ".git", "objects"),
      baseCommit: base,
      dir: join(tmp.path, "sealed.git"),
    });
    await writeFile(join(shallow, "a.txt"), "third\n");
    const d = await workspaceDiff({ workspace: shallow, baseCommit: base, baseObjects: objects });
    expect(d.patch.toString()).toContain("-second\n+third");
  });
});

describe("commitWorkspace (a snapshot's built tree as the agent's base)", () => {
  const identity = {
    name: "flakegym catalog",
    email: "catalog@flakegym.invalid",
    date: "2026-01-01T00:00:00Z",
  };

  it("commits edits and new files on the base, points HEAD and the index at it, and never runs the repo's config", async () => {
    await using tmp = await makeTempDir();
    // the repository's own install may have written anything into .git/config
    const { ws, base } = await scene(tmp.path);
    const marker = join(tmp.path, "fsmonitor-ran");
    git(ws, "config", "core.fsmonitor", `touch ${marker}; false`);
    git(ws, "config", "core.hooksPath", join(tmp.path, "hooks"));
    await writeFile(join(ws, "a.txt"), "pinned\n");
    await writeFile(join(ws, "new.txt"), "made\n");
    const r = await commitWorkspace({
      workspace: ws,
      baseCommit: base,
      baseObjects: join(ws, ".git", "objects"),
      identity,
      message: "built tree",
    });
    expect(r.changed).toEqual(["a.txt", "new.txt"]);
    expect(r.commit).not.toBe(base);
    expect((await readFile(join(ws, ".git", "HEAD"), "utf8")).trim()).toBe(r.commit);
    expect(readHead(ws)).toBe(r.commit);
    expect(await readdir(tmp.path)).not.toContain("fsmonitor-ran");
    const show = (...a: string[]) => git(ws, "-c", "core.fsmonitor=false", ...a);
    expect(show("rev-parse", `${r.commit}^`)).toBe(base);
    expect(show("log", "-1", "--format=%an <%ae> %aI", r.commit)).toBe(
      "flakegym catalog <catalog@flakegym.invalid> 2026-01-01T00:00:00+00:00",
    );
    expect(show("status", "--porcelain")).toBe("");
    // nothing left against the new base
    const diff = await workspaceDiff({
      workspace: ws,
      baseCommit: r.commit,
      baseObjects: join(ws, ".git", "objects"),
    });
    expect(diff.patch.toString()).toBe("");
    // an unchanged tree keeps its base
    const again = await commitWorkspace({
      workspace: ws,
      baseCommit: r.commit,
      baseObjects: join(ws, ".git", "objects"),
      identity,
      message: "built tree",
    });
    expect(again).toMatchObject({ commit: r.commit, changed: [] });
  });

  it("refuses a workspace whose .git is a link (it would write elsewhere)", async () => {
    await using tmp = await makeTempDir();
    const { ws, base, baseObjects } = await scene(tmp.path);
    await rm(join(ws, ".git"), { recursive: true });
    await symlink(join(tmp.path, "snap", ".git"), join(ws, ".git"));
    await writeFile(join(ws, "a.txt"), "changed\n");
    await expect(
      commitWorkspace({ workspace: ws, baseCommit: base, baseObjects, identity, message: "m" }),
    ).rejects.toMatchObject({ code: "E_DIFF_UNSAFE" });
    expect(readHead(join(tmp.path, "snap"))).toBe(base);
  });
});
