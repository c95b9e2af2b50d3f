import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECKS_FILE, compileScenario } from "../../src/eval/compile-scenario.js";
import { checkNames, loadScenario, SUITES, suiteScenarioDirs } from "../../src/eval/scenario.js";
import { loadTaskDir } from "../../src/tasks/catalog.js";
import { gitEnv } from "../../src/tasks/materialize.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "flakegym-scenario-test-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Runs the compiled checks in a copy of the workspace (template + hidden files), as scoring does. */
async function runChecks(taskDir: string, work: string, patch?: string) {
  await cp(join(taskDir, "repo"), work, { recursive: true });
  if (patch) {
    await execa("git", ["init", "-q"], { cwd: work, env: gitEnv() });
    await execa("git", ["apply", patch], { cwd: work, env: gitEnv() });
  }
  await cp(join(taskDir, "hidden"), work, { recursive: true });
  return await execa("node", ["--test", "--test-reporter=tap", CHECKS_FILE], {
    cwd: work,
    reject: false,
    timeout: 60_000,
  });
}

describe("the smoke scenarios compile to catalog tasks whose checks fail on the template and pass with the solution", () => {
  for (const scenarioDir of suiteScenarioDirs("smoke")) {
    const id = scenarioDir.split("/").pop()!;
    it(id, async () => {
      const s = await loadScenario(scenarioDir);
      const catalog = join(dir, `catalog-${id}`);
      await compileScenario(s, catalog);
      const task = await loadTaskDir(join(catalog, id));
      expect(task.spec.tests.run).toMatchObject({ kind: "suite", failToPass: checkNames(s.spec.checks) });
      const before = await runChecks(task.dir, join(dir, `before-${id}`));
      expect(before.exitCode).not.toBe(0);
      const after = await runChecks(task.dir, join(dir, `after-${id}`), task.paths.solution);
      expect(after.exitCode, after.stdout).toBe(0);
      for (const name of checkNames(s.spec.checks)) expect(after.stdout).toContain(`- ${name}`);
      expect(after.stdout).not.toMatch(/^not ok/m);
    }, 60_000);
  }
  it("the smoke suite has the five curated scenarios", () => {
    expect(SUITES.smoke).toEqual([
      "create-file",
      "edit-file",
      "read-summarize",
      "multi-file",
      "typescript-function",
    ]);
  });
});

describe("scenario.json errors name the file and the field", () => {
  it("a bad check, a missing template and an unknown field", async () => {
    const sdir = join(dir, "bad-scenario");
    await mkdir(sdir, { recursive: true });
    const write = (spec: unknown) => writeFile(join(sdir, "scenario.json"), JSON.stringify(spec));
    const base = { version: 1, summary: "s", prompt: "p" };
    await write({ ...base, checks: [{ kind: "content", path: "a.txt" }] });
    await expect(loadScenario(sdir)).rejects.toThrow(
      /scenario\.json: field 'checks\[0\]\.must_match': give at least one/,
    );
    await write({ ...base, checks: [{ kind: "file_exists", path: "../etc/passwd" }] });
    await expect(loadScenario(sdir)).rejects.toThrow(/field 'checks\[0\]\.path'/);
    await write({ ...base, template: "nope", checks: [{ kind: "file_exists", path: "a" }] });
    await expect(loadScenario(sdir)).rejects.toThrow(/field 'template': .*nope is not a directory/);
    await write({ ...base, checks: [{ kind: "file_exists", path: "a" }], extra: 1 });
    await expect(loadScenario(sdir)).rejects.toThrow(/scenario\.json: field '\(root\)'.*extra/);
  });

  it("check names are derived and made unique", () => {
    expect(
      checkNames([
        { kind: "file_exists", path: "a" },
        { kind: "file_exists", path: "a" },
        { kind: "command", command: "true", timeout_s: 60, name: "runs" },
      ]),
    ).toEqual(["file exists: a", "file exists: a (2)", "runs"]);
  });
});
