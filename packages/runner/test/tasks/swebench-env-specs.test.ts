import { describe, expect, it } from "vitest";
import { installOf, parseSwebenchRow, withTestEnv } from "../../src/tasks/swebench.js";
import { SWEBENCH_ENV_FACTS } from "../../src/tasks/swebench-env-specs.data.js";
import {
  envSpecOf,
  inRowVenv,
  installOfEnvSpec,
  isWorkspaceEdit,
  SWEBENCH_SPECS_ORIGIN,
  SwebenchEnvSpec,
  VENV_CREATE,
} from "../../src/tasks/swebench-env-specs.js";
import { harnessSuiteCommand } from "../../src/tasks/swebench-test-tools.js";

const act = '. "$FLAKEGYM_DEPS/venv/bin/activate" && ';

describe("the install facts (swebench-env-specs.data.ts)", () => {
  it("hold every Python repository of SWE-bench Verified, each version in our schema", () => {
    const verified = [
      "astropy/astropy",
      "django/django",
      "matplotlib/matplotlib",
      "mwaskom/seaborn",
      "pallets/flask",
      "psf/requests",
      "pydata/xarray",
      "pylint-dev/pylint",
      "pytest-dev/pytest",
      "scikit-learn/scikit-learn",
      "sphinx-doc/sphinx",
      "sympy/sympy",
    ];
    for (const repo of verified) expect(Object.keys(SWEBENCH_ENV_FACTS)).toContain(repo);
    let versions = 0;
    for (const { specs, versions: index } of Object.values(SWEBENCH_ENV_FACTS)) {
      for (const spec of specs) expect(SwebenchEnvSpec.safeParse(spec).success).toBe(true);
      for (const i of Object.values(index)) expect(specs[i]).toBeDefined();
      versions += Object.keys(index).length;
    }
    expect(versions).toBeGreaterThan(250);
  });
});

describe("envSpecOf", () => {
  it("finds a repository's version, case-insensitively, naming the source", () => {
    const r = envSpecOf("PSF/Requests", "2.4");
    expect(r).toMatchObject({
      ok: true,
      spec: { python: "3.9", install: "python -m pip install ." },
      source: `${SWEBENCH_SPECS_ORIGIN}: MAP_REPO_VERSION_TO_SPECS_PY['psf/requests']['2.4']`,
    });
  });

  it("names the field and what to do for an unknown repository or version", () => {
    expect(envSpecOf("acme/widgets", "1.0")).toMatchObject({
      ok: false,
      field: "repo",
      reason: expect.stringMatching(
        /^'acme\/widgets' has no install facts .*give the row an 'install' column/,
      ),
    });
    expect(envSpecOf("psf/requests", "9.9")).toMatchObject({
      ok: false,
      field: "version",
      reason: expect.stringMatching(
        /^'9\.9' is not a version of psf\/requests in the install facts \(known: .*2\.4.*\): set 'version' to one of them, or give the row an 'install' column$/,
      ),
    });
    expect(envSpecOf("psf/requests", undefined)).toMatchObject({
      ok: false,
      field: "version",
      reason: expect.stringMatching(/^missing in the install facts/),
    });
  });
});

describe("installOfEnvSpec", () => {
  it("makes a venv, installs the package list, the pins and the repository, all in the venv", () => {
    const { install, notes } = installOfEnvSpec("sympy/sympy", {
      python: "3.9",
      packages: "mpmath flake8",
      pip_packages: ["mpmath==1.3.0", "flake8-comprehensions"],
      install: "python -m pip install -e .",
    });
    expect(install).toEqual([
      VENV_CREATE,
      `${act}python -m pip install mpmath flake8`,
      `${act}python -m pip install mpmath==1.3.0 flake8-comprehensions`,
      `${act}{ python -c 'import pytest' 2>/dev/null || python -m pip install 'pytest<8.4'; }`,
      `${act}python -m pip install -e .`,
    ]);
    expect(notes).toEqual([
      "install from sympy/sympy's facts; python: SWE-bench runs this row under Python 3.9, and so does flakegym: the snapshot build takes a CPython 3.9 from the first provider that has one (--python, a Nix profile, uv, pyenv, python3.9 on PATH) and refuses the row without one unless --allow-python-mismatch; the snapshot manifest's envInstall.python records wanted, used and the provider",
    ]);
  });

  it("installs the repository's requirement files that exist, and says what it cannot reproduce", () => {
    const reqs = installOfEnvSpec(
      "pylint-dev/pylint",
      { python: "3.9", packages: "requirements.txt", install: "python -m pip install -e ." },
      { "pylint-dev/pylint": ["requirements_test.txt"] },
    );
    expect(reqs.install[1]).toBe(
      `${act}if [ -f requirements_test.txt ]; then python -m pip install -r requirements_test.txt; fi`,
    );
    const conda = installOfEnvSpec("pydata/xarray", {
      python: "3.10",
      packages: "environment.yml",
      install: "python -m pip install -e .",
      pre_install: ["apt-get update && apt-get install -y graphviz", "sed -i 's/pytest/pytest -rA/' tox.ini"],
    });
    expect(conda.install).toEqual([
      VENV_CREATE,
      `${act}sed -i 's/pytest/pytest -rA/' tox.ini`,
      `${act}{ python -c 'import pytest' 2>/dev/null || python -m pip install 'pytest<8.4'; }`,
      `${act}python -m pip install -e .`,
    ]);
    expect(conda.notes).toEqual([
      expect.stringContaining("python: SWE-bench runs this row under Python 3.10, and so does flakegym"),
      "not run (system setup, not reproduced in the sandbox; graphviz's dot comes from the host's /usr (scripts/ensure-system-deps installs it)): apt-get update && apt-get install -y graphviz",
      "its conda environment (environment.yml) is not built: only the repository's own install runs",
    ]);
  });

  it("bounds pytest before an install whose extras take it unpinned; pytest's own rows install theirs first", () => {
    const ensure = `${act}{ python -c 'import pytest' 2>/dev/null || python -m pip install 'pytest<8.4'; }`;
    const sphinx = installOfEnvSpec("sphinx-doc/sphinx", {
      python: "3.9",
      pip_packages: ["tox==4.16.0"],
      install: "python -m pip install -e .[test]",
    }).install;
    expect(sphinx.indexOf(ensure)).toBe(sphinx.indexOf(`${act}python -m pip install -e .[test]`) - 1);
    const pytest = installOfEnvSpec("pytest-dev/pytest", {
      python: "3.9",
      install: "python -m pip install -e .",
    }).install;
    expect(pytest.slice(-2)).toEqual([`${act}python -m pip install -e .`, ensure]);
  });

  it("runs only pre-install edits of the repository's own files", () => {
    expect(isWorkspaceEdit("sed -i 's/Jinja2>=2.3/Jinja2<3.0/' setup.py")).toBe(true);
    expect(isWorkspaceEdit("grep -q 'x>=2' setup.py && sed -i 's/x>=2/x<3/' setup.py")).toBe(true);
    expect(isWorkspaceEdit("sed -i '/en_US.UTF-8/s/^# //g' /etc/locale.gen && locale-gen")).toBe(false);
    expect(isWorkspaceEdit('mkdir -p "$QHULL_BUILD_DIR"')).toBe(false);
    expect(isWorkspaceEdit("locale-gen en_US.UTF-8")).toBe(false);
  });

  it("wraps a test command so it runs in the venv when the snapshot has one", () => {
    expect(inRowVenv("python3 -m pytest -rA")).toBe(
      'if [ -f "$FLAKEGYM_DEPS/venv/bin/activate" ]; then . "$FLAKEGYM_DEPS/venv/bin/activate"; fi; python3 -m pytest -rA',
    );
  });
});

describe("a row's install (installOf)", () => {
  it("takes the row's install column first, then the facts, then none (the profile's default install at snapshot build)", () => {
    expect(installOf({ repo: "psf/requests", version: "2.4", install: ["make deps"] }, "pytest")).toEqual({
      install: ["make deps"],
      notes: [],
      fetches: true,
      source: "the row's install column",
    });
    const facts = installOf({ repo: "psf/requests", version: "2.4" }, "pytest");
    expect(facts).toMatchObject({
      fetches: true,
      install: expect.arrayContaining([`${act}python -m pip install .`]),
    });
    expect(installOf({ repo: "acme/ring", version: "1" }, "go")).toEqual({
      install: [],
      notes: [],
      fetches: false,
    });
    const unknown = installOf({ repo: "acme/widgets", version: "1" }, "pytest");
    expect(unknown).toMatchObject({ install: [], fetches: false });
    expect((unknown as { notes: string[] }).notes[0]).toMatch(/^repo: 'acme\/widgets' has no install facts/);
  });

  it("rejects a row of a known repository at a version the facts do not list, by row and field", () => {
    const r = parseSwebenchRow(
      {
        instance_id: "psf__requests-1",
        repo: "psf/requests",
        version: "7.7",
        base_commit: "a".repeat(40),
        problem_statement: "x",
        patch: "diff --git a/requests/x.py b/requests/x.py\n",
        test_patch: "diff --git a/tests/test_x.py b/tests/test_x.py\n",
        FAIL_TO_PASS: ["tests/test_x.py::test_x"],
      },
      { file: "/data/rows.jsonl", row: 4 },
    );
    expect(r).toMatchObject({
      ok: false,
      error: {
        row: 4,
        field: "version",
        id: "psf__requests-1",
        reason: expect.stringMatching(/^'7\.7' is not a version/),
      },
    });
  });
});

describe("the suite command as the harness runs it (harnessSuiteCommand, withTestEnv)", () => {
  const ours = "python3 -m pytest -rA -p no:cacheprovider tests/test_ext_viewcode.py";
  it("runs a repository SWE-bench tests through tox the same way, our files after `--`", () => {
    expect(harnessSuiteCommand(ours, "tox --current-env -epy39 -v --")).toBe(
      'rm -rf .tox && if [ -n "$VIRTUAL_ENV" ]; then mkdir -p .tox/py39 && cp "$VIRTUAL_ENV/pyvenv.cfg" .tox/py39/ && ln -s "$VIRTUAL_ENV/lib" .tox/py39/lib; fi && tox --current-env -epy39 -v -- -p no:cacheprovider tests/test_ext_viewcode.py',
    );
  });
  it("keeps our command for a plain pytest command and for a tox command it does not know", () => {
    expect(harnessSuiteCommand(ours, "pytest --no-header -rA")).toBe(ours);
    expect(harnessSuiteCommand(ours, "tox -e lint; rm -rf /")).toBe(ours);
    expect(harnessSuiteCommand("cargo test", "tox --current-env -epy39 -v --")).toBe("cargo test");
  });
  it("every sphinx version of the facts runs through tox, sympy keeps its environment prefix", () => {
    const canary = { file: "tests/test_x.py", prepend: "", append: "", id: "tests/test_x.py::c" };
    const run = {
      kind: "suite" as const,
      command: ours,
      results: "pytest" as const,
      failToPass: [],
      passToPass: [],
      canary,
    };
    for (const version of Object.keys(SWEBENCH_ENV_FACTS["sphinx-doc/sphinx"]!.versions)) {
      const r = withTestEnv(run, { repo: "sphinx-doc/sphinx", version, install: null });
      expect(r.kind === "suite" && r.command, version).toMatch(
        /&& tox --current-env -epy39 -v -- -p no:cacheprovider tests\//,
      );
    }
    const sympy = withTestEnv(
      { ...run, command: "python3 bin/test -C --verbose a/tests/test_x.py", results: "sympy" as const },
      { repo: "sympy/sympy", version: "1.12", install: null },
    );
    expect(sympy.kind === "suite" && sympy.command).toBe(
      "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' python3 bin/test -C --verbose a/tests/test_x.py",
    );
  });
});

describe("pins for packages released after SWE-bench's images", () => {
  it("installs sphinx's docutils bound before the repository, saying why", () => {
    const found = envSpecOf("sphinx-doc/sphinx", "3.5");
    if (!found.ok) throw new Error(found.reason);
    const { install, notes } = installOfEnvSpec("sphinx-doc/sphinx", found.spec);
    const pin = install.findIndex((c) => c.endsWith("python -m pip install 'docutils<0.22'"));
    const repo = install.findIndex((c) => c.endsWith("python -m pip install -e .[test]"));
    expect(pin).toBeGreaterThan(0);
    expect(repo).toBeGreaterThan(pin);
    expect(notes).toContainEqual(expect.stringContaining("docutils.utils.roman"));
  });
});
