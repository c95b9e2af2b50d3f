import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, runCli } from "@flakegym/test-utils";
import { describe, expect, it } from "vitest";

/** The README's quick start: exactly two commands in one shell block (main job; tests). */
function quickStart(): string[] {
  const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
  const section = readme.split(/^## /m).find((s) => s.startsWith("Quick start"));
  if (!section) throw new Error("README.md has no '## Quick start' section");
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error("README.md's quick start has no ```sh block");
  return block
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
}

describe("README quick start", () => {
  it("has exactly two commands: the main job and the test suite", () => {
    const cmds = quickStart();
    expect(cmds).toHaveLength(2);
    expect(cmds[0]).toMatch(/^npm ci && npx flakegym /);
    expect(cmds[1]).toBe("npm test");
  });

  it("the main-job command succeeds (run here after the suite's own install)", async () => {
    const main = quickStart()[0]!.replace(/^npm ci && npx flakegym /, "");
    const r = await runCli(main.split(/\s+/), { timeoutMs: 600_000 });
    expect(r.stderr).not.toMatch(/^error/m);
    expect(r.exitCode).toBe(0);
  });
});
