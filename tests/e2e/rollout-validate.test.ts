import { cp, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, runCli, type TempDir } from "@flakegym/test-utils";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TASK } from "./rollout-helpers.js";

/**
 * `flakegym validate` end to end on a small catalog: a good task passes (gold 1, empty 0, no flaky
 * test), a task whose reference solution does not solve it fails with the reason, and a task that
 * needs network is skipped with a message on this offline machine. Exit status 1.
 */

let tmp: TempDir;
beforeAll(async () => {
  tmp = await makeTempDir("flakegym-e2e-validate-");
});
afterAll(async () => {
  await tmp.cleanup();
});

const CATALOG = join(REPO_ROOT, "packages/runner/catalog");

/** Copies a catalog task under a new id, optionally with another reference solution. */
async function copyTask(dest: string, from: string, id: string, solution?: string): Promise<void> {
  const dir = join(dest, id);
  await cp(join(CATALOG, from), dir, { recursive: true });
  const spec = JSON.parse(await readFile(join(dir, "task.json"), "utf8"));
  spec.id = id;
  await writeFile(join(dir, "task.json"), JSON.stringify(spec, null, 2));
  if (solution) await writeFile(join(dir, spec.solution), solution);
}

describe("flakegym validate", () => {
  it("passes a sound task, fails one whose reference solution does not solve it, skips a network task", async () => {
    const catalog = join(tmp.path, "catalog");
    await copyTask(catalog, TASK, "good");
    await copyTask(
      catalog,
      TASK,
      "bad-solution",
      [
        "diff --git a/README.md b/README.md",
        "--- a/README.md",
        "+++ b/README.md",
        "@@ -1,1 +1,1 @@",
        `-${(await readFile(join(CATALOG, TASK, "repo/README.md"), "utf8")).split("\n")[0]}`,
        "+# semver-lite (docs only)",
        "",
      ].join("\n"),
    );
    await cp(join(CATALOG, "ratatui-2148"), join(catalog, "ratatui-2148"), { recursive: true });

    const r = await runCli(
      ["validate", "--all", "--catalog", catalog, "--repeat", "2", "--out", join(tmp.path, "run")],
      { timeoutMs: 500_000 },
    );
    expect(r.exitCode, r.stderr).toBe(1);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^TASK\s+GOLD\s+EMPTY\s+FLAKY\s+RESULT$/);
    expect(r.stdout).toMatch(/^good\s+1\.00\s+0\.00\s+0\s+PASS$/m);
    expect(r.stdout).toMatch(/^bad-solution\s+0\.00\s+0\.00\s+0\s+FAIL$/m);
    expect(r.stdout).toMatch(
      /gold: reward 0, expected 1 — the reference solution does not pass the hidden tests/,
    );
    expect(r.stdout).toMatch(/^ratatui-2148\s+-\s+-\s+0\s+SKIP$/m);
    expect(r.stdout).toMatch(/skipped: needs network/);
    expect(r.stdout).toMatch(/1 passed, 1 failed, 1 skipped/);
  });
});
