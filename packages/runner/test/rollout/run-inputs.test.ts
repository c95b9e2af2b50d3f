import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkResumeInputs, hashInputs, inputChanges, runInputFiles } from "../../src/rollout/run-inputs.js";
import type { RunConfig } from "../../src/run-format/schema.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "fg-inputs-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("run inputs", () => {
  it("inputChanges names every changed, removed and added file", () => {
    expect(inputChanges({ a: "1", b: "2", c: "3" }, { a: "1", b: "9", c: "missing", d: "4" })).toEqual([
      "changed: b",
      "removed: c",
      "added: d",
    ]);
    expect(inputChanges({ a: "1" }, { a: "1" })).toEqual([]);
  });

  it("a resume with a changed input is a usage error naming it", () => {
    expect(() => checkResumeInputs("/r", { a: "1" }, { a: "2" })).toThrow(/changed: a/);
    try {
      checkResumeInputs("/r", { a: "1" }, { a: "2" });
    } catch (err) {
      expect(err).toMatchObject({ code: "E_INPUT_CHANGED" });
    }
  });

  it("lists a catalog task's files (not .git) and scripted plans; hashes them by content", async () => {
    const task = join(dir, "catalog", "t1");
    await mkdir(join(task, "repo", ".git"), { recursive: true });
    await writeFile(join(task, "task.json"), "{}");
    await writeFile(join(task, "repo", "a.js"), "1");
    await writeFile(join(task, "repo", ".git", "HEAD"), "x");
    await writeFile(join(dir, "plan.json"), "{}");
    const config = {
      tasks: ["t1"],
      catalog: join(dir, "catalog"),
      policies: [`scripted:${join(dir, "plan.json")}`, "gold"],
    } as unknown as RunConfig;
    const files = await runInputFiles(config, dir);
    expect(files.map((f) => f.key)).toEqual([
      `plan ${join(dir, "plan.json")}`,
      "task t1/repo/a.js",
      "task t1/task.json",
    ]);
    expect(files[2]!.path).toBe(join(task, "task.json"));
    const before = await hashInputs(files);
    await writeFile(join(task, "task.json"), '{"prompt":"new"}');
    expect(inputChanges(before, await hashInputs(files))).toEqual(["changed: task t1/task.json"]);
    // the same task elsewhere (a moved checkout) is the same input
    await cp(join(dir, "catalog"), join(dir, "moved"), { recursive: true });
    const moved = await runInputFiles({ ...config, catalog: join(dir, "moved") } as RunConfig, dir);
    expect(inputChanges(await hashInputs(files), await hashInputs(moved))).toEqual([]);
  });
});
