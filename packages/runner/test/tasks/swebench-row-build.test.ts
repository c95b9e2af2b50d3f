import { describe, expect, it } from "vitest";
import { parseSwebenchRow, rowLanguage } from "../../src/tasks/swebench.js";
import { unbuildableReason } from "../../src/tasks/swebench-buildable.js";
import { idNamedFile } from "../../src/tasks/test-runners.js";

const diff = (path: string) =>
  `diff --git a/${path} b/${path}\n--- a/${path}\n+++ b/${path}\n@@ -1 +1 @@\n-a\n+b\n`;
const at = { file: "rows.jsonl", row: 1 };

/** A django__django-10097-shaped row: its test patch changes only `.txt` data the tests read. */
const dataOnly = {
  instance_id: "django__django-10097",
  repo: "django/django",
  base_commit: "b9cf764be62e77b4777b3a75ec256f6209a57671",
  version: "2.2",
  problem_statement: "Make URLValidator reject invalid characters in the username and password",
  patch: diff("django/core/validators.py"),
  test_patch: `${diff("tests/validators/invalid_urls.txt")}${diff("tests/validators/valid_urls.txt")}`,
  FAIL_TO_PASS: ["test_validators (validators.tests.TestValidators)"],
  PASS_TO_PASS: ["test_basic_equality (validators.tests.TestValidatorEquality)"],
};

describe("rows whose test patch holds only data files", () => {
  it("take the repository's known language, then the gold patch's", () => {
    expect(rowLanguage(null, ["tests/validators/invalid_urls.txt"], { repo: "django/django" })).toBe(
      "Python",
    );
    expect(
      rowLanguage(null, ["data.txt"], {
        repo: "someone/else",
        patchFiles: ["src/lib.rs", "src/a.rs", "x.py"],
      }),
    ).toBe("Rust");
    expect(rowLanguage(null, ["data.txt"], { repo: "someone/else" })).toBeUndefined();
  });

  it("django__django-10097's shape is accepted: the module its ids name holds the canary and is protected", () => {
    const r = parseSwebenchRow(dataOnly, at);
    if (!r.ok) throw new Error(`rejected: ${r.error.field}: ${r.error.reason}`);
    const run = r.task.spec.tests.run;
    expect(run.kind === "suite" && run.canary.file).toBe("tests/validators/tests.py");
    expect(run.kind === "suite" && run.command).toContain("validators.tests");
    expect(r.task.spec.protected).toEqual(["tests/validators/tests.py"]);
    expect(r.task.spec.metadata?.intake_notes).toMatch(/adds no test code.*protected/);
  });

  it("idNamedFile: the module file a pytest or Django id names", () => {
    expect(idNamedFile("pytest", ["tests/test_a.py::test_x[1]"])).toBe("tests/test_a.py");
    expect(idNamedFile("django", ["A docstring line.", "test_x (a.b.C)"])).toBe("tests/a/b.py");
    expect(idNamedFile("sympy", ["test_x"])).toBeUndefined();
  });
});

describe("rows whose environment cannot be built here", () => {
  const xarray = {
    ...dataOnly,
    instance_id: "pydata__xarray-4094",
    repo: "pydata/xarray",
    version: "0.12",
    patch: diff("xarray/core/dataarray.py"),
    test_patch: diff("xarray/tests/test_dataset.py"),
    FAIL_TO_PASS: ["xarray/tests/test_dataset.py::test_to_stacked_array_to_unstacked_dataset"],
    PASS_TO_PASS: [],
  };

  it("a conda-only version is refused by name, saying what to give instead", () => {
    const r = parseSwebenchRow(xarray, at);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ field: "version", id: "pydata__xarray-4094" });
    expect(r.error.reason).toMatch(
      /^pydata\/xarray 0\.12 builds its environment with conda .*give the row an 'install' column/,
    );
  });

  it("the same row with pip commands of its own is accepted", () => {
    const r = parseSwebenchRow({ ...xarray, install: ["python -m pip install -e ."] }, at);
    expect(r.ok).toBe(true);
  });

  it("unbuildableReason: only environment.yml facts", () => {
    expect(unbuildableReason("r/x", "1", { python: "3.9", packages: "requirements.txt" })).toBeUndefined();
    expect(unbuildableReason("r/x", "1", { python: "3.9", packages: "environment.yml" })).toMatch(/conda/);
  });

  it("unbuildableReason: a version whose setup.py downloads sources is refused; its neighbours are not", () => {
    const pip = { python: "3.8", packages: "requirements.txt" };
    const mpl = "matplotlib/matplotlib";
    expect(unbuildableReason(mpl, "3.4", pip)).toMatch(
      /^matplotlib\/matplotlib 3\.4's own build \(setup\.py\) downloads FreeType 2\.6\.1 and Qhull .*give the row an 'install' column .*system_freetype and system_qhull/,
    );
    expect(unbuildableReason(mpl, "3.3", pip)).toMatch(/downloads FreeType 2\.6\.1 from/);
    expect(unbuildableReason(mpl, "3.1", pip)).toBeUndefined();
    expect(unbuildableReason(mpl, "3.0", pip)).toBeUndefined();
    expect(unbuildableReason("r/x", "3.4", pip)).toBeUndefined();
  });

  it("a matplotlib 3.4 row is refused at intake (field version), and accepted with its own install", () => {
    const row = {
      ...xarray,
      instance_id: "matplotlib__matplotlib-20488",
      repo: "matplotlib/matplotlib",
      version: "3.4",
      patch: diff("lib/matplotlib/image.py"),
      test_patch: diff("lib/matplotlib/tests/test_image.py"),
      FAIL_TO_PASS: ["lib/matplotlib/tests/test_image.py::test_huge_range_log[-1]"],
    };
    const r = parseSwebenchRow(row, at);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error).toMatchObject({ field: "version", id: "matplotlib__matplotlib-20488" });
    expect(parseSwebenchRow({ ...row, install: ["python -m pip install -e ."] }, at).ok).toBe(true);
  });
});

describe("a row's suite follows its repository's harness facts", () => {
  const base = {
    base_commit: "b9cf764be62e77b4777b3a75ec256f6209a57671",
    problem_statement: "x",
    PASS_TO_PASS: [],
  };
  it("requests: read with short path parameters, pytest bounded where the facts leave it unpinned", () => {
    const r = parseSwebenchRow(
      {
        ...base,
        instance_id: "psf__requests-6028",
        repo: "psf/requests",
        version: "2.27",
        patch: diff("requests/utils.py"),
        test_patch: diff("tests/test_utils.py"),
        FAIL_TO_PASS: ["tests/test_utils.py::test_x[/x.py]"],
      },
      at,
    );
    if (!r.ok) throw new Error(`rejected: ${r.error.reason}`);
    const run = r.task.spec.tests.run;
    expect(run.kind === "suite" && run.logParser).toBe("pytest-short-paths");
    expect(r.task.spec.install.join("\n")).toContain("'pytest<8.4'");
    expect(r.task.spec.metadata?.intake_notes).toMatch(/pytest is unpinned/);
  });
  it("sympy: the facts' PYTHONWARNINGS comes with the test command", () => {
    const r = parseSwebenchRow(
      {
        ...base,
        instance_id: "sympy__sympy-20590",
        repo: "sympy/sympy",
        version: "1.7",
        patch: diff("sympy/core/basic.py"),
        test_patch: diff("sympy/core/tests/test_basic.py"),
        FAIL_TO_PASS: ["test_immutable"],
      },
      at,
    );
    if (!r.ok) throw new Error(`rejected: ${r.error.reason}`);
    const run = r.task.spec.tests.run;
    expect(run.kind === "suite" && run.command).toContain(
      "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' python3 bin/test -C --verbose",
    );
  });
});
