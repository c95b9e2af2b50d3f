import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { execa } from "execa";

/**
 * Test logs for the parity suite, made by real runners on small generated projects: pytest of
 * several releases (ids with absolute paths, spaces, ` - `, enum members, unicode, duplicates;
 * passes, failures, errors in setup and teardown, xfail/xpass, skips; plain, verbose, coloured),
 * Django's test runner (verbosity 2) and SymPy's runner (verbose) — plus a few hand-written
 * lines for shapes only old releases print.
 */

export interface LogSample {
  /** How it was made (runner, release, options). */
  readonly name: string;
  readonly kind: "pytest" | "django" | "sympy";
  readonly log: string;
}

const PYTEST_FILES: Readonly<Record<string, string>> = {
  "tests/__init__.py": "",
  "tests/data/a.txt": "a\n",
  "tests/test_params.py": `import enum
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


class MouseButton(enum.Enum):
    LEFT = 1
    RIGHT = 3


@pytest.mark.parametrize(
    "path", [os.path.join(HERE, "data", "a.txt"), "/etc/hosts", "//net/share", "rel/x.py", "/a/*.py", HERE]
)
def test_paths(path):
    assert path


@pytest.mark.parametrize("value", ["a b", "x - y", "\\u00fcn\\u00ef", "", None, 1.5, b"by", "a", "a"])
def test_values(value):
    assert value != "x - y"


@pytest.mark.parametrize("a,b", [(1, 2), (3, 4)], ids=["one two", "three"])
def test_named(a, b):
    assert a < b


@pytest.mark.parametrize("button", [MouseButton.LEFT, MouseButton.RIGHT])
def test_mouse(button):
    assert button.value != 3


@pytest.mark.xfail(reason="known - bug")
def test_xfail():
    assert 0


@pytest.mark.xfail(reason="fixed already")
def test_xpass():
    assert 1


@pytest.mark.skip(reason="no")
def test_skip():
    pass


@pytest.mark.skipif(sys.platform != "nowhere", reason="not here")
def test_skipif():
    pass


def test_prints_a_forged_line():
    print("PASSED tests/test_params.py::test_never_ran")


class TestKlass:
    def test_method(self):
        assert 1

    def test_fails(self):
        assert 1 == 2, "one - two"
`,
  "tests/test_fixtures.py": `import pytest


@pytest.fixture
def broken():
    raise RuntimeError("setup - failed")


@pytest.fixture
def teardown_fails():
    yield 1
    raise RuntimeError("teardown failed")


def test_setup_error(broken):
    pass


def test_teardown_error(teardown_fails):
    assert teardown_fails == 1


def test_error():
    raise ValueError("boom")
`,
  "tests/sub/__init__.py": "",
  "tests/sub/test_deep.py": `import pytest


@pytest.mark.parametrize("n", range(3))
def test_deep(n):
    assert n < 2
`,
};

const DJANGO_FILES: Readonly<Record<string, string>> = {
  "settings.py": `SECRET_KEY = "parity"
INSTALLED_APPS = ["demo"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
`,
  "demo/__init__.py": "",
  "demo/tests.py": `import sys
import unittest

from django.test import SimpleTestCase


class Demo(SimpleTestCase):
    def test_ok(self):
        self.assertTrue(True)

    def test_fail(self):
        self.assertEqual(1, 2)

    def test_error(self):
        raise ValueError("boom")

    @unittest.skip("no db")
    def test_skip(self):
        pass

    def test_doc(self):
        """A docstring's first line stands for the test.

        More text."""

    def test_noisy(self):
        sys.stderr.write("Internal Server Error: /x/\\n")

    @unittest.expectedFailure
    def test_xf(self):
        self.assertEqual(1, 2)
`,
};

const SYMPY_TEST = `from sympy.testing.pytest import XFAIL, SKIP


def test_ok():
    assert 1 + 1 == 2


def test_fail():
    assert 1 == 2


def test_error():
    raise ValueError("boom")


@XFAIL
def test_xfail():
    assert 0


def test_skip():
    SKIP("no")


def test_last():
    pass
`;

/** Lines only older runners print, or print under conditions not reproduced here. */
export const HAND_WRITTEN: readonly LogSample[] = [
  {
    name: "hand: django 1.x/2.x shapes (two-space OK, --version help test, 3.10 ids)",
    kind: "django",
    log: [
      "test_a (m.tests.C) ...  OK",
      "test_b (m.tests.C) ... ok",
      "test_version (admin_scripts.tests.CommandTypes)",
      "--version is equivalent to version ... ok",
      "test_c (m.tests.C) ... System check identified no issues (0 silenced).",
      "ok",
      "FAIL: test_d (m.tests.C)",
      "test_d (m.tests.C) ... FAIL",
    ].join("\n"),
  },
  {
    name: "hand: sympy with a file verdict on the last line and a failure header",
    kind: "sympy",
    log: [
      "sympy/a/tests/test_x.py[3] ",
      "test_one ok",
      "test_two F",
      "test_three E",
      "sympy/a/tests/test_y.py[1] ",
      "test_four ok                                          [OK]",
      "________________________________ sympy/a/tests/test_x.py:test_two ________________________________",
    ].join("\n"),
  },
  {
    name: "hand: tox --current-env with colour (sphinx), old pytest verbose lines",
    kind: "pytest",
    log: [
      "py39: commands[0]> python -X dev -m pytest -rA --durations 25 tests/test_build.py",
      "tests/test_build.py::test_a PASSED",
      "tests/test_build.py::test_b[with space] FAILED",
      "\u001b[32mPASSED\u001b[0m tests/test_build.py::test_c",
      "\u001b[31mFAILED\u001b[0m tests/test_build.py::test_d - AssertionError: a - b",
      "PASSED tests/test_build.py::test_e[a b c]",
    ].join("\n"),
  },
];

async function writeTree(root: string, files: Readonly<Record<string, string>>): Promise<void> {
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), text);
  }
}

/** The option sets pytest is run with: ours, astropy's, seaborn's, and coloured output. */
const PYTEST_RUNS: readonly (readonly string[])[] = [
  ["-rA", "-p", "no:cacheprovider"],
  ["-rA", "-vv", "-o", "console_output_style=classic", "--tb=no"],
  ["--no-header", "-rA", "-v"],
  ["-rA", "--color=yes"],
];

/** Logs of each pytest release (`pythons`: release → its venv's python) on the generated project. */
export async function pytestLogs(
  root: string,
  pythons: Readonly<Record<string, string>>,
  signal: AbortSignal,
): Promise<LogSample[]> {
  const dir = join(root, "pytest-project");
  await writeTree(dir, PYTEST_FILES);
  const out: LogSample[] = [];
  for (const [release, python] of Object.entries(pythons)) {
    for (const opts of PYTEST_RUNS) {
      const r = await execa(python, ["-m", "pytest", ...opts, "tests"], {
        cwd: dir,
        cancelSignal: signal,
        reject: false,
        all: true,
        env: { PYTHONDONTWRITEBYTECODE: "1" },
      });
      out.push({ name: `pytest ${release} ${opts.join(" ")}`, kind: "pytest", log: r.all ?? "" });
    }
  }
  return out;
}

/** A Django runner log (verbosity 2, as SWE-bench's test command) from the venv's Django. */
export async function djangoLog(root: string, python: string, signal: AbortSignal): Promise<LogSample> {
  const dir = join(root, "django-project");
  await writeTree(dir, DJANGO_FILES);
  const r = await execa(python, ["-m", "django", "test", "--settings=settings", "--verbosity", "2", "demo"], {
    cwd: dir,
    cancelSignal: signal,
    reject: false,
    all: true,
    env: { PYTHONPATH: dir },
  });
  return { name: "django test --verbosity 2", kind: "django", log: r.all ?? "" };
}

/** A SymPy runner log (`verbose=True`, what `bin/test --verbose` runs) of a test file put into the venv's SymPy. */
export async function sympyLog(root: string, python: string, signal: AbortSignal): Promise<LogSample> {
  const site = await execa(python, ["-c", "import os, sympy; print(os.path.dirname(sympy.__file__))"], {
    cancelSignal: signal,
  });
  await writeFile(join(site.stdout.trim(), "core", "tests", "test_flakegym_parity.py"), SYMPY_TEST);
  const r = await execa(
    python,
    ["-c", "import sympy; sympy.test('sympy/core/tests/test_flakegym_parity.py', verbose=True)"],
    { cwd: root, cancelSignal: signal, reject: false, all: true },
  );
  return { name: "sympy bin/test --verbose", kind: "sympy", log: r.all ?? "" };
}
