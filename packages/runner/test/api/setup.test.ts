import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { failedSessionDirOf, setup } from "../../src/api/setup.js";

let root: string;
let repo: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "fg-setup-"));
  repo = join(root, "lib");
  await mkdir(repo);
  await writeFile(join(repo, "README.md"), "# lib\n\n```sh\npython -m unittest\n```\n");
});
afterAll(async () => rm(root, { recursive: true, force: true }));

describe("setup that fails", () => {
  it("leaves nothing behind by default; keepFailed keeps its logs and whole error, not the workspace", async () => {
    const sessionsDir = join(root, "sessions");
    await expect(setup(repo, { sessionsDir })).rejects.toThrow(/no flakegym.yml and no llm/);
    expect(await readdir(sessionsDir).catch(() => [])).toEqual([]);

    const err = await setup(repo, { sessionsDir, keepFailed: true }).catch((e: unknown) => e);
    const dir = failedSessionDirOf(err);
    expect(dir).toBeDefined();
    expect(await readdir(dir!)).toEqual(["error.txt"]);
    expect(await readFile(join(dir!, "error.txt"), "utf8")).toMatch(/E_NO_CONTRACT[\s\S]*--no-scaffold/);
  });
});
