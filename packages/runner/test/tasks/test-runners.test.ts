import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { canaryOf, parseTestResults, resultLinePattern } from "../../src/scoring/results.js";
import {
  djangoId,
  djangoLabel,
  isJunkTestId,
  parseDjangoLine,
  parseSympyLine,
  pytestFiles,
  testIdProblem,
  testRunOf,
} from "../../src/tasks/test-runners.js";

/** Whether `python3 -m pytest` runs here (the image's user Python has it; Debian's needs python3-pytest). */
function hasPytest(): boolean {
  try {
    execFileSync("python3", ["-m", "pytest", "--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Whether `cmd args` runs here. */
function runs(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const noPython = !runs("python3", ["--version"]);
const noPytest = !hasPytest();
if (noPython || noPytest)
  console.log(
    `skipped the real ${noPython ? "unittest and pytest runs: python3 is not installed here" : "pytest run: python3 -m pytest is not available"} (sh scripts/ensure-system-deps installs python3-pytest)`,
  );

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "flakegym-runners-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("test ids", () => {
  it("tells pytest's progress fragments from test ids", () => {
    expect(["[100%]", "[ 50%]", " [  7%] "].every(isJunkTestId)).toBe(true);
    expect(["test_x", "tests/a.py::test[100%]", "[100]"].some(isJunkTestId)).toBe(false);
  });

  it("puts Django ids in one shape and leaves docstring ids alone", () => {
    expect(djangoId("test_a (m.tests.C.test_a)")).toBe("test_a (m.tests.C)");
    expect(djangoId("test_a (m.tests.C)")).toBe("test_a (m.tests.C)");
    expect(djangoId("test_a (m.tests.C.test_b)")).toBe("test_a (m.tests.C.test_b)");
    expect(djangoId("Regression test for #123.")).toBe("Regression test for #123.");
  });

  it("names the runner a misfiled id belongs to", () => {
    expect(testIdProblem("pytest", "test_a (m.C)")).toMatch(/django-style id.*test_runner to django/);
    expect(testIdProblem("pytest", "test_immutable")).toMatch(/bare test name.*sympy/);
    expect(testIdProblem("pytest", "t.py::test[a b]")).toMatch(/with a space/);
    expect(testIdProblem("sympy", "sympy/a/tests/test_a.py::test_a")).toMatch(/not a SymPy test name/);
    // go test -v reports fuzz targets and examples like tests (seen in dustin/go-humanize, Masterminds/semver)
    expect(testIdProblem("go", "FuzzComma")).toBeUndefined();
    expect(testIdProblem("go", "ExampleVersion/sub")).toBeUndefined();
    expect(testIdProblem("go", "BenchmarkX")).toMatch(/not a go test name/);
    expect(testIdProblem("sympy", "test_a")).toBeUndefined();
    expect(testIdProblem("django", "A docstring line.")).toBeUndefined();
    expect(testIdProblem("django", "two\nlines")).toMatch(/spans lines/);
  });
});

describe("result lines", () => {
  it("reads Django's verbose lines and failure headers", () => {
    expect(parseDjangoLine("test_a (m.C) ... ok")).toEqual({ id: "test_a (m.C)", outcome: "passed" });
    expect(parseDjangoLine("  test_a (m.C.test_a) ... FAIL")).toEqual({
      id: "test_a (m.C)",
      outcome: "failed",
    });
    expect(parseDjangoLine("ERROR: test_b (m.C)")).toEqual({ id: "test_b (m.C)", outcome: "failed" });
    expect(parseDjangoLine("Doc line. ...  OK")).toEqual({ id: "Doc line.", outcome: "passed" });
    expect(parseDjangoLine("test_c (m.C) ... skipped 'x'")).toBeUndefined();
    expect(parseDjangoLine("Ran 3 tests in 0.1s")).toBeUndefined();
  });

  it("reads SymPy's verbose lines", () => {
    expect(parseSympyLine("test_a ok")).toEqual({ id: "test_a", outcome: "passed" });
    expect(parseSympyLine("  test_b F")).toEqual({ id: "test_b", outcome: "failed" });
    expect(parseSympyLine("test_c E")).toEqual({ id: "test_c", outcome: "failed" });
    expect(parseSympyLine("test_d f")).toBeUndefined();
    // the last test of a file carries the file's verdict; a failure's report header names it too
    expect(parseSympyLine("test_e F                                   [FAIL]")).toEqual({
      id: "test_e",
      outcome: "failed",
    });
    expect(parseSympyLine("test_f ok        [OK]")).toEqual({ id: "test_f", outcome: "passed" });
    expect(parseSympyLine("_____ sympy/core/tests/test_basic.py:test_g _____")).toEqual({
      id: "test_g",
      outcome: "failed",
    });
    expect(parseSympyLine("sympy/core/tests/test_basic.py[3] ")).toBeUndefined();
  });

  it.skipIf(noPython)(
    "reads a real unittest run (Django's runner is unittest's) and its canary fails under the id the spec names",
    async () => {
      // a tests/ tree laid out as Django's: tests/<app>/<module>.py, labels relative to tests/
      const root = join(tmp, "dj");
      await mkdir(join(root, "tests", "app"), { recursive: true });
      await writeFile(join(root, "tests", "app", "__init__.py"), "");
      const file = "tests/app/test_things.py";
      const run = testRunOf({
        runner: "django",
        failToPass: ["test_good (app.test_things.T)"],
        passToPass: ["A documented test."],
        testFiles: [file, "docs/releases/4.2.txt"],
      });
      if (!("run" in run) || run.run.kind !== "suite") throw new Error("expected a suite");
      expect(run.run.command).toBe(
        'PYTHONPATH="$PWD" python3 tests/runtests.py --settings=test_sqlite --parallel 1 --verbosity 2 app.test_things',
      );
      expect(run.run.results).toBe("django");
      const canary = canaryOf(run.run.canary, "test_c4n4ry", 3, 4);
      await writeFile(
        join(root, file),
        [
          "import unittest",
          "class T(unittest.TestCase):",
          "    def test_good(self):",
          "        pass",
          "    def test_doc(self):",
          '        """A documented test."""',
          "    def test_bad(self):",
          "        self.assertEqual(1, 2)",
          "",
        ].join("\n") + canary.append,
      );
      // the same unittest runner Django's runtests.py drives, at verbosity 2
      let out: string;
      try {
        execFileSync("python3", ["-m", "unittest", "-v", "app.test_things"], {
          cwd: join(root, "tests"),
          encoding: "utf8",
          stdio: "pipe",
        });
        throw new Error("the canary should have failed the run");
      } catch (e) {
        out = (e as { stderr: string }).stderr;
      }
      const results = parseTestResults("django", out);
      expect(results.get("test_good (app.test_things.T)")).toBe("passed");
      expect(results.get("A documented test.")).toBe("passed");
      expect(results.get("test_bad (app.test_things.T)")).toBe("failed");
      expect(results.get(canary.id)).toBe("failed");
      const kept = execFileSync("grep", ["-E", resultLinePattern("django")], {
        input: out,
        encoding: "utf8",
      });
      expect(parseTestResults("django", kept)).toEqual(results);
    },
  );
});

describe("testRunOf", () => {
  it("runs SymPy's hidden test files with bin/test and a module-level canary", () => {
    const run = testRunOf({
      runner: "sympy",
      failToPass: ["test_immutable"],
      passToPass: [],
      testFiles: ["sympy/core/tests/test_basic.py", "sympy/core/basic.py"],
    });
    expect(run).toMatchObject({
      run: {
        kind: "suite",
        command: "python3 bin/test -C --verbose sympy/core/tests/test_basic.py",
        results: "sympy",
        canary: { file: "sympy/core/tests/test_basic.py", id: "{name}" },
      },
    });
  });

  it("puts a pytest canary into a hidden file the ids name when no file is named test_*.py", () => {
    for (const file of ["tests/checkers/unittest_similar.py", "testing/python/integration.py"]) {
      const run = testRunOf({
        runner: "pytest",
        failToPass: [`${file}::test_x`],
        passToPass: [],
        testFiles: [file],
      });
      expect(run).toMatchObject({ run: { kind: "suite", canary: { file, id: `${file}::{name}` } } });
    }
    expect(
      testRunOf({ runner: "pytest", failToPass: ["a/b.py::test_x"], passToPass: [], testFiles: ["a/c.py"] }),
    ).toMatchObject({ field: "test_patch", reason: expect.stringMatching(/a \.py file a test id names/) });
  });

  it("puts Django's canary into a test module, not a support module the patch also touches", () => {
    const run = testRunOf({
      runner: "django",
      failToPass: ["test_a (app.tests.T)"],
      passToPass: [],
      testFiles: ["tests/app/models.py", "tests/app/tests.py"],
    });
    expect(run).toMatchObject({
      run: {
        command:
          'PYTHONPATH="$PWD" python3 tests/runtests.py --settings=test_sqlite --parallel 1 --verbosity 2 app.models app.tests',
        canary: { file: "tests/app/tests.py", id: "{name} (app.tests.Canary_{name})" },
      },
    });
  });

  it.skipIf(noPytest)(
    "pytest collects a named file its python_files setting would not discover (real pytest)",
    async () => {
      const root = join(tmp, "pylint-like");
      await mkdir(join(root, "tests"), { recursive: true });
      await writeFile(join(root, "pytest.ini"), "[pytest]\npython_files = test_*.py\n");
      const file = "tests/unittest_similar.py";
      const run = testRunOf({
        runner: "pytest",
        failToPass: [`${file}::test_x`],
        passToPass: [],
        testFiles: [file],
      });
      if (!("run" in run) || run.run.kind !== "suite") throw new Error("expected a suite");
      const canary = canaryOf(run.run.canary, "test_c4n4ry", 3, 4);
      await writeFile(join(root, file), `def test_x():\n    assert True\n${canary.append}`);
      let out = "";
      try {
        execFileSync("bash", ["-c", run.run.command], { cwd: root, encoding: "utf8", stdio: "pipe" });
      } catch (e) {
        out = (e as { stdout: string }).stdout;
      }
      const results = parseTestResults("pytest", out);
      expect(results.get(`${file}::test_x`), out).toBe("passed");
      expect(results.get(canary.id), out).toBe("failed");
    },
  );

  it("also runs the Django modules the ids name, beyond the ones the test patch touches", () => {
    const run = testRunOf({
      runner: "django",
      failToPass: ["test_a (app.tests.T)"],
      passToPass: ["test_b (other.test_views.V)", "A docstring names no module."],
      testFiles: ["tests/app/tests.py"],
    });
    expect(run).toMatchObject({
      run: { command: expect.stringMatching(/--verbosity 2 app\.tests other\.test_views$/) },
    });
  });

  it("labels Django test modules relative to tests/", () => {
    expect(djangoLabel("tests/forms_tests/tests/test_formsets.py")).toBe("forms_tests.tests.test_formsets");
    expect(djangoLabel("tests/app/__init__.py")).toBe("app");
  });
});

describe("pytestFiles", () => {
  it("names hidden test files as they are, and an id's other file only if it exists when run", () => {
    const ids = ["testing/test_capture.py::test_a", "test_capsysbinary.py::test_hello"];
    const files = pytestFiles(ids, "testing/test_capture.py", ["testing/test_capture.py"]);
    expect(files).toBe(
      `testing/test_capture.py $(for f in test_capsysbinary.py; do [ -e "$f" ] && printf '%s ' "$f"; done)`,
    );
    expect(pytestFiles(["a/test_x.py::t"], "a/test_x.py", ["a/test_x.py"])).toBe("a/test_x.py");
  });

  it("the shell leaves out a file pytest never had, keeps one that exists (a real sh)", async () => {
    const dir = await mkdtemp(join(tmpdir(), "flakegym-pytest-files-"));
    try {
      await writeFile(join(dir, "test_root.py"), "");
      const files = pytestFiles(
        ["test_root.py::t", "test_inner.py::t", "tests/test_a.py::t"],
        "tests/test_a.py",
        ["tests/test_a.py"],
      );
      const out = execFileSync("/bin/sh", ["-c", `printf '[%s]' ${files}`], { cwd: dir, encoding: "utf8" });
      expect(out).toBe("[tests/test_a.py][test_root.py]");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
