import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

const git = (...args: string[]) => execa("git", args, { cwd: REPO_ROOT, reject: false });

describe("repository hygiene", () => {
  it("package-lock.json carries integrity hashes and no download URLs", () => {
    const lock = readFileSync(join(REPO_ROOT, "package-lock.json"), "utf8");
    expect(lock).toContain('"integrity": "sha512-');
    expect(lock).not.toMatch(/"resolved":\s*"https?:/);
  });

  it("no tracked file names a package registry host", async () => {
    const r = await git("grep", "-nIE", 'https?://[^/" ]*(registry|mirror)[^/" ]*', "--", ".");
    expect(r.stdout).toBe("");
  });

  it("the linter/formatter is clean", async () => {
    const r = await execa("npx", ["biome", "check", "."], { cwd: REPO_ROOT, reject: false });
    expect(r.stdout + r.stderr).not.toMatch(/Found \d+ errors?/);
    expect(r.exitCode).toBe(0);
  });

  it("every project typechecks under strict TypeScript", async () => {
    const r = await execa("npm", ["run", "typecheck", "--silent"], {
      cwd: REPO_ROOT,
      reject: false,
      timeout: 170_000,
    });
    expect(r.stdout.match(/error TS\d+.*/g) ?? []).toEqual([]);
    expect(r.exitCode).toBe(0);
  });

  it("nx knows the four packages and the test projects", async () => {
    const r = await execa("npx", ["nx", "show", "projects"], { cwd: REPO_ROOT, reject: false });
    const projects = r.stdout.split("\n").map((l) => l.trim());
    for (const p of ["profiles", "nomad-jobs", "cline-vendor", "runner", "tests-integration", "tests-e2e"]) {
      expect(projects).toContain(`@flakegym/${p}`);
    }
  });
});
