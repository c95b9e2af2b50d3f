import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hiddenTestsOf } from "../../src/scoring/hidden-tests.js";
import { BUILTIN_CATALOG_DIR, loadTask, loadTaskDir } from "../../src/tasks/catalog.js";

const dirs: string[] = [];
afterAll(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** A copy of semver-lite-caret-zero in a temp dir, with its task.json parsed for editing. */
async function copiedTask(): Promise<{ dir: string; spec: { tests: Record<string, unknown> } }> {
  const root = await mkdtemp(join(tmpdir(), "flakegym-hidden-"));
  dirs.push(root);
  const dir = join(root, "semver-lite-caret-zero");
  await cp(join(BUILTIN_CATALOG_DIR, "semver-lite-caret-zero"), dir, { recursive: true });
  return { dir, spec: JSON.parse(await readFile(join(dir, "task.json"), "utf8")) };
}

describe("hiddenTestsOf", () => {
  it("a tests patch: the patch to apply, the paths it touches, the suite with its canary, the protected paths", async () => {
    const t = await loadTask("semver-lite-caret-zero");
    const h = await hiddenTestsOf(t, 42_000);
    expect(h.install).toEqual({ kind: "patch", patch: await readFile(t.paths.testsPatch!, "utf8") });
    expect(h.testFiles).toEqual(["test/caret-zero.test.mjs"]);
    expect(h.timeoutMs).toBe(42_000);
    expect(h.commands).toEqual([]);
    expect(h.suite).toMatchObject({
      command: "node --test --test-reporter=tap",
      results: "tap",
      failToPass: [
        "caret zero major stays within the minor",
        "caret zero minor stays on the patch",
        "caret zero works inside sets and alternatives",
      ],
      passToPass: ["caret on one and above is unchanged"],
      canary: { file: "test/caret-zero.test.mjs", id: "{name}" },
    });
    expect({ protected: h.protected, allowEdits: h.allowEdits }).toEqual({ protected: [], allowEdits: [] });
  });

  it("an ids task: one command per test id", async () => {
    // no catalog task is graded per id any more (ratatui-2148 became a suite): one made from a copy
    const { dir, spec } = await copiedTask();
    spec.tests.run = {
      kind: "ids",
      command: "node --test --test-name-pattern {test} test/caret-zero.test.mjs",
      passPattern: "# pass 1",
      failToPass: ["caret zero major stays within the minor"],
      passToPass: [],
    };
    await writeFile(join(dir, "task.json"), JSON.stringify(spec));
    const h = await hiddenTestsOf(await loadTaskDir(dir), 1_000);
    expect(h.suite).toBeUndefined();
    expect(h.commands[0]).toMatchObject({
      kind: "fail_to_pass",
      id: "caret zero major stays within the minor",
    });
    expect(h.commands[0]!.command).toContain("--test-name-pattern");
  });

  it("a tests dir: its files (bytes as they are) at their workspace paths, which are the protected paths", async () => {
    const { dir, spec } = await copiedTask();
    delete spec.tests.patch;
    spec.tests.dir = "hidden";
    await writeFile(join(dir, "task.json"), JSON.stringify(spec));
    await mkdir(join(dir, "hidden", "test", "deep"), { recursive: true });
    await writeFile(join(dir, "hidden", "test", "a.test.mjs"), "// a\n");
    await writeFile(join(dir, "hidden", "test", "deep", "b.bin"), Buffer.from([0, 255]));
    const h = await hiddenTestsOf(await loadTaskDir(dir), 1_000);
    expect(h.testFiles).toEqual(["test/a.test.mjs", "test/deep/b.bin"]);
    expect(h.install).toEqual({
      kind: "files",
      files: [
        { path: "test/a.test.mjs", content: Buffer.from("// a\n") },
        { path: "test/deep/b.bin", content: Buffer.from([0, 255]) },
      ],
    });
  });
});
