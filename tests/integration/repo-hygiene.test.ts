import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@flakegym/test-utils";
import { execa } from "execa";
import { describe, expect, it } from "vitest";

const git = (...args: string[]) => execa("git", args, { cwd: REPO_ROOT, reject: false });

// The checks run at once: vitest runs one file at a time on 2 cores, and each tsc program, biome
// and nx keep about one core busy.
describe.concurrent("repository hygiene", () => {
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
    // `npm run typecheck`'s tsc programs (`tsc -p <config> && tsc -p <config>`), side by side
    const script: string = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).scripts
      .typecheck;
    const programs = script.split(" && ");
    expect(
      programs.filter((p) => !/^tsc -p \S+$/.test(p)),
      "package.json scripts.typecheck is `tsc -p <config>` joined by ` && `; update this test with it",
    ).toEqual([]);
    const runs = await Promise.all(
      programs.map((p) => execa("npx", p.split(" "), { cwd: REPO_ROOT, reject: false, timeout: 170_000 })),
    );
    for (const [i, r] of runs.entries()) {
      expect(r.stdout.match(/error TS\d+.*/g) ?? [], programs[i]).toEqual([]);
      expect(r.exitCode, `${programs[i]}: ${r.stderr}`).toBe(0);
    }
  });

  it("nx knows the four packages and the test projects", async () => {
    const r = await execa("npx", ["nx", "show", "projects"], { cwd: REPO_ROOT, reject: false });
    const projects = r.stdout.split("\n").map((l) => l.trim());
    for (const p of ["profiles", "nomad-jobs", "cline-vendor", "runner", "tests-integration", "tests-e2e"]) {
      expect(projects).toContain(`@flakegym/${p}`);
    }
  });
});
