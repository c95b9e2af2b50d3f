import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
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
