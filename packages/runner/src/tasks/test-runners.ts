import type { ProfileId } from "@flakegym/profiles";
import { match } from "ts-pattern";
import { z } from "zod";
import { type Canary, shellQuote, type TestRun } from "./task-spec.js";

/**
 * How a dataset row's test ids (FAIL_TO_PASS / PASS_TO_PASS) are run: one runner per language,
 * each with the id shape it accepts, the hidden-test files it can hold a canary, and the command.
 * Pure: intake (swebench.ts) picks the runner, these functions build the TaskSpec's `tests.run`.
 */

export const TestRunner = z
  .enum(["pytest", "django", "sympy", "cargo", "go", "node", "jest", "vitest", "mocha"])
  .describe(
    "pytest: node ids `path.py::test`; django: Django's own runner (`tests/runtests.py`), ids `test_x (module.Class)` or a docstring's first line; sympy: SymPy's own runner (`bin/test`), bare names `test_x`; cargo: libtest names `module::test`; go: `TestName` or `TestName/sub`; node: node:test names (TAP); jest/vitest/mocha: full test names",
  );
export type TestRunner = z.infer<typeof TestRunner>;

/** The languages intake runs tests for (GitHub names, lower-cased) and their default runner. */
export const SUPPORTED_LANGUAGES: Readonly<Record<string, TestRunner>> = {
  python: "pytest",
  rust: "cargo",
  go: "go",
  javascript: "node",
  typescript: "node",
};

/**
 * Repositories whose tests run under their own runner rather than pytest. Source: SWE-bench's
 * harness gives exactly these two Python repositories their own log parsers (PyPI `swebench`
 * 5.0.2, `harness/log_parsers/python.py`, `parse_log_django` and `parse_log_sympy`).
 */
export const REPO_RUNNERS: Readonly<Record<string, TestRunner>> = {
  "django/django": "django",
  "sympy/sympy": "sympy",
};

/**
 * Ids that are not tests but fragments of pytest's progress output, which some SWE-bench Verified
 * PASS_TO_PASS lists carry (`[100%]`, `[ 50%]`). Dropped at intake with a note. Pure.
 */
export function isJunkTestId(id: string): boolean {
  return /^\[\s*\d{1,3}%\]$/.test(id.trim());
}

/**
 * A Django runner id in one shape: Python ≥ 3.11's unittest prints `test_x (mod.Class.test_x)`,
 * older ones `test_x (mod.Class)`; both become the older form. Other text (a docstring's first
 * line, which Django's verbose runner prints instead of the name) is kept as it is. Pure.
 */
export function djangoId(id: string): string {
  const m = /^(\w+) \(([\w.]+)\.(\w+)\)$/.exec(id.trim());
  return m && m[1] === m[3] ? `${m[1]} (${m[2]})` : id.trim();
}

/**
 * One line of Django's verbose runner output (`runtests.py --verbosity 2`) → test id and outcome.
 * Shapes (Django's unittest-based runner; the same rules SWE-bench's `parse_log_django` reads):
 * `<id> ... ok|OK`, `<id> ... FAIL|ERROR`, and the `FAIL: <id>` / `ERROR: <id>` headers of the
 * failure report. A skipped test is not reported (so it did not pass). Pure.
 */
export function parseDjangoLine(raw: string): { id: string; outcome: "passed" | "failed" } | undefined {
  const line = raw.trim();
  const head = /^(FAIL|ERROR): (.+)$/.exec(line);
  if (head) return { id: djangoId(head[2]!), outcome: "failed" };
  const m = /^(.+?) \.\.\. +(ok|OK|FAIL|ERROR)$/.exec(line);
  if (!m) return undefined;
  return { id: djangoId(m[1]!), outcome: m[2]!.toLowerCase() === "ok" ? "passed" : "failed" };
}

/**
 * One line of SymPy's `bin/test --verbose` output → test id and outcome: `test_x ok`, `test_x F`
 * (failed), `test_x E` (error) — the shapes SWE-bench's `parse_log_sympy` reads — where the last
 * test of each file also carries the file's verdict (`test_x F   [FAIL]`, `test_x ok   [OK]`), and
 * a failure's report header `___ path/test_y.py:test_x ___` (seen in a real run of SymPy 1.12's
 * runner, `sympy.test(file, verbose=True)`, which `bin/test` calls). Pure.
 */
export function parseSympyLine(raw: string): { id: string; outcome: "passed" | "failed" } | undefined {
  const line = raw.trim();
  const head = /^_+ \S+\.py:(test_\w+) _+$/.exec(line);
  if (head) return { id: head[1]!, outcome: "failed" };
  const m = /^(test_\w+) +(ok|F|E)( +\[(OK|FAIL)\])?$/.exec(line);
  if (!m) return undefined;
  return { id: m[1]!, outcome: m[2] === "ok" ? "passed" : "failed" };
}

/** The lines (grep -E) a sympy suite's output is filtered to before parsing (django's: runner-logs.ts). */
export const SYMPY_LINES =
  "(^[[:space:]]*test_[A-Za-z0-9_]+ +(ok|F|E)( +\\[(OK|FAIL)\\])?[[:space:]]*$|^_+ [^ ]+\\.py:test_[A-Za-z0-9_]+ _+$)";

/** The profile each runner's toolchain lives in. */
export function profileOfRunner(runner: TestRunner): ProfileId {
  return match(runner)
    .with("pytest", "django", "sympy", () => "python" as const)
    .with("cargo", () => "rust" as const)
    .with("go", () => "go" as const)
    .with("node", "jest", "vitest", "mocha", () => "node" as const)
    .exhaustive();
}

/** The GitHub language a file extension is written in, for rows that name no language. */
export function languageOfPath(path: string): string | undefined {
  const ext = /\.([a-z]+)$/i.exec(path)?.[1]?.toLowerCase();
  return match(ext)
    .with("py", () => "Python")
    .with("rs", () => "Rust")
    .with("go", () => "Go")
    .with("js", "mjs", "cjs", "jsx", () => "JavaScript")
    .with("ts", "mts", "cts", "tsx", () => "TypeScript")
    .with("c", "h", () => "C")
    .with("cc", "cpp", "hpp", "cxx", () => "C++")
    .with("java", () => "Java")
    .with("rb", () => "Ruby")
    .with("php", () => "PHP")
    .otherwise(() => undefined);
}

/** Why a test id cannot be run by `runner`, or undefined. Pure. */
export function testIdProblem(runner: TestRunner, id: string): string | undefined {
  if (id.trim() === "" || /[\n\r]/.test(id)) return "is empty or spans lines";
  return (
    match(runner)
      .with("pytest", () =>
        /^[^\s:]+\.py(::\S+)+$/.test(id)
          ? undefined
          : /^\S+ \([\w.]+\)$/.test(id)
            ? "is a django-style id (`test_x (module.Class)`), not a pytest node id: set the row's test_runner to django"
            : /^test_\w+$/.test(id)
              ? "is a bare test name, not a pytest node id (`path/to/test_x.py::test_name`): set the row's test_runner to sympy if it is SymPy's"
              : /\s/.test(id)
                ? "is not a pytest node id without spaces: flakegym reads pytest's `PASSED <id>` lines, which cannot delimit an id with a space (parametrized ids with spaces are not supported)"
                : "is not a pytest node id (`path/to/test_x.py::test_name`)",
      )
      // any single line: a docstring's first line stands for its test in Django's verbose output
      .with("django", () => undefined)
      .with("sympy", () =>
        /^test_\w+$/.test(id)
          ? undefined
          : "is not a SymPy test name (`test_name`, as `bin/test --verbose` prints it)",
      )
      .with("cargo", () =>
        /^[A-Za-z_][A-Za-z0-9_]*(::[A-Za-z_][A-Za-z0-9_]*)*$/.test(id)
          ? undefined
          : "is not a libtest name (`module::test_name`)",
      )
      // `go test -v` reports tests, fuzz targets (their seed corpus runs as a test) and examples alike
      .with("go", () =>
        /^(Test|Fuzz|Example)[A-Za-z0-9_]*(\/\S+)*$/.test(id)
          ? undefined
          : "is not a go test name (`TestName`, `TestName/subtest`, `FuzzName` or `ExampleName`)",
      )
      .with("node", "jest", "vitest", "mocha", () => undefined)
      .exhaustive()
  );
}

/** Whether a file a test patch touches can hold the runner's canary test. Pure. */
export function isCanaryFile(runner: TestRunner, path: string): boolean {
  return match(runner)
    .with("pytest", () => /(^|\/)(test_[^/]*|[^/]*_test)\.py$/.test(path))
    .with("django", () => /^tests\/.+\.py$/.test(path) && !path.endsWith("__init__.py"))
    .with("sympy", () => /(^|\/)tests\/test_[^/]*\.py$/.test(path))
    .with("cargo", () => /(^|\/)tests\/[^/]+\.rs$/.test(path))
    .with("go", () => /_test\.go$/.test(path))
    .with("node", () => /\.(test|spec)\.(m?js|cjs)$|(^|\/)test\/[^/]+\.(m?js|cjs)$/.test(path))
    .with("jest", "vitest", "mocha", () => false)
    .exhaustive();
}

/** The runner's canary test for a hidden test file (see results.ts: it must fail on every honest run). */
function canaryFor(runner: "pytest" | "django" | "sympy" | "cargo" | "go" | "node", file: string): Canary {
  return match(runner)
    .with("pytest", () => ({
      file,
      prepend: "",
      append: "\n\ndef {name}():\n    assert {a} == {b}\n",
      id: `${file}::{name}`,
    }))
    .with("django", () => ({
      file,
      prepend: "",
      // a plain unittest case: Django's runner collects it like its own SimpleTestCase
      append:
        "\n\nimport unittest as _flakegym_unittest\n\n\nclass Canary_{name}(_flakegym_unittest.TestCase):\n    def {name}(self):\n        self.assertEqual({a}, {b})\n",
      id: `{name} (${djangoLabel(file)}.Canary_{name})`,
    }))
    .with("sympy", () => ({
      file,
      prepend: "",
      append: "\n\ndef {name}():\n    assert {a} == {b}\n",
      id: "{name}",
    }))
    .with("cargo", () => ({
      file,
      prepend: "",
      append: "\n#[test]\nfn {name}() {\n    assert_eq!({a}u64, {b}u64);\n}\n",
      id: "{name}",
    }))
    .with("go", () => ({
      file,
      prepend: "",
      append: '\nfunc Test_{name}(t *testing.T) {\n\tif {a} != {b} {\n\t\tt.Fatal("canary")\n\t}\n}\n',
      id: "Test_{name}",
    }))
    .with("node", () => ({
      file,
      prepend: "",
      // a dynamic import works in CommonJS and ES modules alike
      append:
        '\nimport("node:test").then(({ test }) => test("{name}", async () => (await import("node:assert")).strictEqual({a}, {b})));\n',
      id: "{name}",
    }))
    .exhaustive();
}

/** Escapes a test name for the runners whose filter flag takes a regular expression. */
function regexEscape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

export interface RunInput {
  readonly runner: TestRunner;
  readonly failToPass: readonly string[];
  readonly passToPass: readonly string[];
  /** Files the hidden test patch adds or changes. */
  readonly testFiles: readonly string[];
}

/**
 * The TaskSpec `tests.run` for a row: a suite with a canary for runners whose per-test results
 * flakegym parses (pytest, cargo, go, node:test), one filtered command per id otherwise (jest,
 * vitest, mocha). Returns a reason (field `test_patch`) when no hidden file can hold a canary.
 */
export function testRunOf(input: RunInput): { run: TestRun } | { field: string; reason: string } {
  const { runner } = input;
  const failToPass = [...input.failToPass];
  const passToPass = [...input.passToPass];
  if (runner === "jest" || runner === "vitest" || runner === "mocha") {
    const { command, passPattern } = match(runner)
      .with("jest", () => ({
        command: "npx --no-install jest --ci --testNamePattern {test}",
        passPattern: "^Tests:\\s+(\\d+ skipped, )?[1-9]\\d* passed",
      }))
      .with("vitest", () => ({
        command: "npx --no-install vitest run --testNamePattern {test}",
        passPattern: "^\\s*Tests\\s+[1-9]\\d* passed",
      }))
      .with("mocha", () => ({
        command: "npx --no-install mocha --grep {test}",
        passPattern: "^\\s*[1-9]\\d* passing",
      }))
      .exhaustive();
    return {
      run: {
        kind: "ids",
        command,
        passPattern,
        failToPass: failToPass.map(regexEscape),
        passToPass: passToPass.map(regexEscape),
      },
    };
  }
  // a Django test patch also touches support modules under tests/ (models.py, urls.py): prefer a test module
  const file =
    (runner === "django"
      ? input.testFiles.find((f) => /^tests\/(.+\/)?tests?(_[^/]*)?\.py$/.test(f))
      : undefined) ??
    input.testFiles.find((f) => isCanaryFile(runner, f)) ??
    (runner === "pytest" ? namedPytestFile(input.testFiles, [...failToPass, ...passToPass]) : undefined) ??
    (input.testFiles.some((f) => f.endsWith(".py"))
      ? undefined
      : idNamedFile(runner, [...failToPass, ...passToPass]));
  if (file === undefined) {
    return {
      field: "test_patch",
      reason: `adds no ${runner} test file that can hold the canary test (${canaryFileHint(runner)}); touched: ${input.testFiles.join(", ") || "(nothing)"}`,
    };
  }
  const { command, results } = match(runner)
    .with("pytest", () => ({
      command: `python3 -m pytest -rA -p no:cacheprovider ${pytestFiles([...failToPass, ...passToPass], file, input.testFiles)}`,
      results: "pytest" as const,
    }))
    .with("django", () => ({
      // Django's documented way to run its own suite (docs/internals/contributing/writing-code/unit-tests.txt);
      // runtests.py imports the django package and stops without it: the checkout itself is on the path
      command: `PYTHONPATH="$PWD" python3 tests/runtests.py --settings=test_sqlite --parallel 1 --verbosity 2 ${djangoLabels(input.testFiles, file, [...failToPass, ...passToPass])}`,
      results: "django" as const,
    }))
    .with("sympy", () => ({
      // SymPy's own runner: -C no cache, --verbose prints one `name ok|F|E` line per test
      command: `python3 bin/test -C --verbose ${[...new Set(input.testFiles.filter((f) => isCanaryFile("sympy", f)))].sort().map(shellQuote).join(" ")}`,
      results: "sympy" as const,
    }))
    .with("cargo", () => ({ command: "cargo test --offline --no-fail-fast", results: "libtest" as const }))
    .with("go", () => ({ command: "go test -v -count=1 ./...", results: "gotest" as const }))
    .with("node", () => ({ command: "node --test --test-reporter=tap", results: "tap" as const }))
    .exhaustive();
  return {
    run: { kind: "suite", command, results, failToPass, passToPass, canary: canaryFor(runner, file) },
  };
}

function canaryFileHint(runner: TestRunner): string {
  return match(runner)
    .with("pytest", () => "test_*.py or *_test.py, or a .py file a test id names")
    .with("django", () => "a .py module under tests/")
    .with("sympy", () => "*/tests/test_*.py")
    .with("cargo", () => "tests/*.rs")
    .with("go", () => "*_test.go")
    .with("node", () => "*.test.js, *.test.mjs or test/*.js")
    .with("jest", "vitest", "mocha", () => "none needed")
    .exhaustive();
}

/**
 * The test files pytest is pointed at: those the ids name, and the canary's. A file that is neither
 * a hidden test file nor the canary's goes in only if it exists when the command runs: an id can
 * name a file pytest never had — pytest's own rows print their `pytester` runs' result lines, which
 * SWE-bench's parser reads too (pytest-7521: `test_capsysbinary.py::test_hello`) — and pytest stops
 * on a path it cannot find (`ERROR: file not found`), running nothing. Pure.
 */
export function pytestFiles(
  ids: readonly string[],
  canaryFile: string,
  testFiles: readonly string[],
): string {
  const files = [...new Set([...ids.map((id) => id.split("::")[0]!), canaryFile])].sort();
  const sure = files.filter((f) => f === canaryFile || testFiles.includes(f));
  const maybe = files.filter((f) => !sure.includes(f));
  const present =
    maybe.length === 0
      ? ""
      : `$(for f in ${maybe.map(shellQuote).join(" ")}; do [ -e "$f" ] && printf '%s ' "$f"; done)`;
  return [...sure.map(shellQuote), ...(present ? [present] : [])].join(" ");
}

/**
 * A hidden .py file the row's ids name, for repositories whose pytest settings collect other
 * names (pylint's `unittest_*.py`, pytest's `testing/python/integration.py`): pytest collects a
 * file given on its command line whatever its `python_files` setting (pytest's python.py
 * `pytest_collect_file` skips the pattern check for initial paths), and the command names it. Pure.
 */
function namedPytestFile(testFiles: readonly string[], ids: readonly string[]): string | undefined {
  const named = new Set(ids.map((id) => id.split("::")[0]!));
  return testFiles.find((f) => f.endsWith(".py") && named.has(f));
}

/**
 * For a test patch that adds no Python at all (only data files, e.g. django__django-10097's `.txt`
 * lists; the caller asks only then): the module file the first graded id names, which the repository already has — pytest's
 * `path.py::…`, Django's `test_x (a.b.Class)` → `tests/a/b.py`. The caller protects it (the
 * agent's edits to it are dropped), as it would a hidden file. Pure.
 */
export function idNamedFile(runner: TestRunner, ids: readonly string[]): string | undefined {
  for (const id of ids) {
    if (runner === "pytest" && /^[^\s:]+\.py::/.test(id)) return id.split("::")[0]!;
    const m = runner === "django" ? /^\w+ \(([\w.]+)\.\w+\)$/.exec(id) : null;
    if (m) return `tests/${m[1]!.replaceAll(".", "/")}.py`;
  }
  return undefined;
}

/** A Django test module's label for `runtests.py`: `tests/a/b.py` → `a.b`. Pure. */
export function djangoLabel(file: string): string {
  return file
    .replace(/^tests\//, "")
    .replace(/\.py$/, "")
    .replace(/\/__init__$/, "")
    .replaceAll("/", ".");
}

/**
 * The labels `runtests.py` is given: every hidden test module, the canary's, and the module each
 * `test_x (module.Class)` id names (a graded test may live in a module the test patch leaves alone;
 * docstring ids name none). Pure.
 */
function djangoLabels(testFiles: readonly string[], canaryFile: string, ids: readonly string[]): string {
  const labels = new Set(testFiles.filter((f) => isCanaryFile("django", f)).map(djangoLabel));
  labels.add(djangoLabel(canaryFile));
  for (const id of ids) {
    const m = /^\w+ \(([\w.]+)\.\w+\)$/.exec(id);
    if (m) labels.add(m[1]!);
  }
  return [...labels].sort().map(shellQuote).join(" ");
}
