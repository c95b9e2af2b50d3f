import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { localRepoPath, probeRemote } from "../../src/tasks/materialize.js";

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
