import { execFileSync } from "node:child_process";
import { appendFile, cp, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  canaryOf,
  parseTestResults,
  resultLinePattern,
} from "../../../packages/runner/src/scoring/results.js";
import type { ResultFormat } from "../../../packages/runner/src/tasks/task-spec.js";
import { testRunOf } from "../../../packages/runner/src/tasks/test-runners.js";

/**
 * The django and sympy runners against the real projects' sources, when present (their code is
 * never committed): FLAKEGYM_DJANGO_SRC = an unpacked Django source tree (the sdist on PyPI ships
 * tests/runtests.py), FLAKEGYM_SYMPY_SRC = an unpacked SymPy source tree, FLAKEGYM_PYTHON = a
 * python3 with their dependencies (Django: asgiref, sqlparse; SymPy: mpmath; default python3).
 * Each run appends the task's canary to a real test module of a copy, runs the command intake
 * builds, keeps the lines the scoring script keeps, and reads them with the scorer's parser.
 */
const DJANGO = process.env.FLAKEGYM_DJANGO_SRC;
const SYMPY = process.env.FLAKEGYM_SYMPY_SRC;
const PYTHON = process.env.FLAKEGYM_PYTHON ?? "python3";

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "flakegym-real-runners-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

/** Runs `command` in `cwd` with FLAKEGYM_PYTHON first on PATH as python3; the grep-kept results. */
async function runSuite(format: ResultFormat, command: string, cwd: string) {
  const r = await execa("bash", ["-c", command], {
    cwd,
    reject: false,
    all: true,
    timeout: 600_000,
    env: { PATH: `${dirname(PYTHON)}:${process.env.PATH}` },
  });
  const kept = execFileSync("grep", ["-E", resultLinePattern(format)], { input: r.all, encoding: "utf8" });
  return { exitCode: r.exitCode, results: parseTestResults(format, kept), all: r.all ?? "" };
}

describe.skipIf(!DJANGO)("django runner on Django's own suite (FLAKEGYM_DJANGO_SRC)", () => {
  it("the row's ids pass, the canary fails under its id, skips are not passes", async () => {
    const src = join(tmp, "django");
    await cp(DJANGO!, src, { recursive: true });
    const file = "tests/basic/tests.py";
    const run = testRunOf({
      runner: "django",
      failToPass: ["test_can_create_instance_using_kwargs (basic.tests.ModelInstanceCreationTests)"],
      passToPass: ["You can initialize a model instance using positional arguments,"],
      testFiles: [file],
    });
    if (!("run" in run) || run.run.kind !== "suite") throw new Error("expected a suite");
    const canary = canaryOf(run.run.canary, "test_c4n4ry", 3, 4);
    await appendFile(join(src, file), canary.append);
    const r = await runSuite("django", run.run.command, src);
    for (const id of [...run.run.failToPass, ...run.run.passToPass])
      expect(r.results.get(id), r.all).toBe("passed");
    expect(r.results.get(canary.id), r.all).toBe("failed");
    // skipped on SQLite (no DISTINCT ON): reported, but never as a pass
    expect(r.all).toMatch(/test_emptyqs_distinct .* \.\.\. skipped/);
    expect(r.results.get("test_emptyqs_distinct (basic.tests.ModelTest)")).toBeUndefined();
    expect(r.exitCode).not.toBe(0);
  });
});

describe.skipIf(!SYMPY)("sympy runner on SymPy's own tests (FLAKEGYM_SYMPY_SRC)", () => {
  it("reads every test of a real run, the last of a file (which carries [OK]/[FAIL]) included", async () => {
    const src = join(tmp, "sympy");
    await cp(SYMPY!, src, { recursive: true });
    const file = "sympy/core/tests/test_basic.py";
    const run = testRunOf({
      runner: "sympy",
      failToPass: ["test_immutable"],
      passToPass: [],
      testFiles: [file],
    });
    if (!("run" in run) || run.run.kind !== "suite") throw new Error("expected a suite");
    const canary = canaryOf(run.run.canary, "test_c4n4ry", 3, 4);
    await appendFile(join(src, file), canary.append);
    // bin/test is in SymPy's repository, not its sdist: there, run the same runner it calls
    const command = execFileSync("bash", ["-c", `test -f ${join(src, "bin/test")} && echo yes || true`])
      .toString()
      .includes("yes")
      ? run.run.command
      : `python3 -c "import sympy, sys; sys.exit(not sympy.test('${file}', verbose=True))"`;
    const r = await runSuite("sympy", command, src);
    expect(r.results.get("test_immutable"), r.all).toBe("passed");
    expect(r.results.get(canary.id), r.all).toBe("failed");
    expect([...r.results.values()].filter((o) => o === "passed").length).toBeGreaterThan(10);
  });
});

it.skipIf(DJANGO && SYMPY)("says why the real-runner tests skipped", () => {
  console.info(
    "real-runners: set FLAKEGYM_DJANGO_SRC / FLAKEGYM_SYMPY_SRC to unpacked Django / SymPy sources (pip download --no-binary :all: django sympy) and FLAKEGYM_PYTHON to a python3 with their dependencies to run these",
  );
});
