import { chmod, cp, mkdir, mkdtemp, readlink, rm, stat, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LoadedTask } from "../../src/tasks/catalog.js";
import {
  commitTree,
  git,
  localRepoPath,
  materializeSource,
  probeRemote,
} from "../../src/tasks/materialize.js";

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "flakegym-materialize-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("local repository sources", () => {
  it("reads the path of an absolute path or file:// URL, and nothing else", () => {
    expect(localRepoPath("/srv/mirrors/a/b")).toBe("/srv/mirrors/a/b");
    expect(localRepoPath(pathToFileURL("/srv/m/a b").href)).toBe("/srv/m/a b");
    expect(localRepoPath("git@example.invalid:a/b.git")).toBeUndefined();
  });

  it("a missing local clone is E_REPO_MISSING (not a network skip), naming the path", async () => {
    const gone = join(tmp, "no-such-clone");
    await expect(probeRemote("t-1", gone, 2000)).rejects.toMatchObject({
      code: "E_REPO_MISSING",
      message: expect.stringContaining(`its repository ${gone} does not exist on this machine`),
    });
  });
});

describe("a git source with a local mirror", () => {
  it("is fetched from DIR/owner/repo without touching the network, at the task's rev", async () => {
    const mirror = join(tmp, "mirrors");
    const upstream = join(mirror, "acme", "widget");
    await mkdir(upstream, { recursive: true });
    await writeFile(join(upstream, "lib.txt"), "v1\n");
    const rev = await commitTree(upstream);
    const task = {
      spec: {
        id: "mirror-demo",
        // unreachable on purpose: a fetch that tried it would fail
        source: { kind: "git", url: "https://example.invalid/acme/widget", rev, probeTimeoutMs: 1000 },
      },
    } as unknown as LoadedTask;
    const lines: string[] = [];
    const dest = join(tmp, "ws");
    const r = await materializeSource(task, dest, { repoMirror: mirror, log: (l) => lines.push(l) });
    expect(r.commit).toBe(rev);
    expect(await git(["show", "HEAD:lib.txt"], { cwd: dest })).toBe("v1");
    expect(lines[0]).toBe(`https://example.invalid/acme/widget from the local mirror ${upstream}`);
    // without a mirror holding it, the same task needs the network, and says where a mirror goes
    await expect(
      materializeSource(task, join(tmp, "ws2"), { repoMirror: join(tmp, "empty") }),
    ).rejects.toMatchObject({
      code: "E_NETWORK_REQUIRED",
      hint: expect.stringContaining("FLAKEGYM_REPO_MIRROR=DIR"),
    });
  });
});

describe("a local (catalog) source read from the Nix store", () => {
  it("is copied writable by its owner (dirs and files), links as written, with the same commit", async () => {
    const src = join(tmp, "store-like");
    await mkdir(join(src, "test"), { recursive: true });
    await writeFile(join(src, "test", "a.test.mjs"), "ok\n");
    await writeFile(join(src, "run.sh"), "#!/bin/sh\n", { mode: 0o755 });
    await symlink("run.sh", join(src, "link"));
    const writable = await commitTree(await copyOf(src, join(tmp, "writable-copy")));
    // the store's modes: files 0444 / 0555, directories 0555
    await chmod(join(src, "test", "a.test.mjs"), 0o444);
    await chmod(join(src, "run.sh"), 0o555);
    await chmod(join(src, "test"), 0o555);
    const task = {
      spec: { id: "store-demo", source: { kind: "local", dir: "repo", commit: writable } },
      paths: { sourceDir: src },
    } as unknown as LoadedTask;
    const dest = join(tmp, "from-store");
    expect((await materializeSource(task, dest)).commit).toBe(writable);
    const mode = async (p: string) => (await stat(p)).mode & 0o777;
    expect(await mode(join(dest, "test"))).toBe(0o755);
    expect(await mode(join(dest, "test", "a.test.mjs"))).toBe(0o644);
    expect(await mode(join(dest, "run.sh"))).toBe(0o755);
    // a relative link stays as written (never resolved to a host path)
    expect(await readlink(join(dest, "link"))).toBe("run.sh");
    // the source (the store) is never changed
    expect(await mode(join(src, "test"))).toBe(0o555);
    await chmod(join(src, "test"), 0o755);
  });
});

async function copyOf(src: string, dest: string): Promise<string> {
  await cp(src, dest, { recursive: true, verbatimSymlinks: true });
  return dest;
}
