import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parquetWriteBuffer } from "hyparquet-writer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadCatalog, loadTaskDir } from "../../src/tasks/catalog.js";
import { formatRowError } from "../../src/tasks/dataset.js";
import { datasetAsCatalog } from "../../src/tasks/dataset-catalog.js";
import {
  canonicalColumns,
  parseSwebenchRow,
  readSwebenchRow,
  rowLanguage,
  rowPatchFiles,
  rowRunner,
  rowTextProblem,
  runnerTestIds,
  type SwebenchRow,
  suiteRun,
  taskIdOf,
  testListsOf,
} from "../../src/tasks/swebench.js";
import { detectDatasetSchema, loadSwebench } from "../../src/tasks/swebench-dataset.js";
import { inRowVenv, SWEBENCH_SPECS_ORIGIN, VENV_CREATE } from "../../src/tasks/swebench-env-specs.js";
import { writeTaskFolder } from "../../src/tasks/task-dir.js";

const FIXTURE = fileURLToPath(
  new URL("../../../../tests/fixtures/swebench/swebench-sample.jsonl", import.meta.url),
);
const SHAPES = fileURLToPath(
  new URL("../../../../tests/fixtures/swebench/verified-shapes.jsonl", import.meta.url),
);
const SWE_AGENT = fileURLToPath(
  new URL("../../../../tests/fixtures/swe-agent-13k-sample.jsonl", import.meta.url),
);

let tmp: string;
beforeAll(async () => {
  tmp = await mkdtemp(join(tmpdir(), "flakegym-swebench-"));
});
afterAll(async () => {
  await rm(tmp, { recursive: true, force: true });
});

describe("loadSwebench", () => {
  it("turns the fixture rows into tasks with hidden tests and rejects each malformed row with row, field and reason", async () => {
    const d = await loadSwebench(FIXTURE);
    expect(d.summary).toMatchObject({ format: "jsonl", rows: 12, accepted: 6, rejected: 6 });
    expect(d.tasks.map((t) => t.spec.id)).toEqual([
      "minicalc__minicalc-1",
      "acme__widgets-7",
      "tinygauge__tinygauge-3",
      "go-kit__ring-12",
      "left-pad__left-pad-9",
      "django__django-11099",
    ]);
    const lines = d.rejected.map(formatRowError);
    expect(lines).toEqual([
      expect.stringMatching(/:6: \[acme__javalib-1\] field 'test_patch': Java is not supported/),
      expect.stringMatching(
        /:8: \[swesmith__.*\] field 'test_patch': missing: flakegym needs the hidden tests as a patch/,
      ),
      expect.stringMatching(
        /:9: \[minicalc__minicalc-2\] field 'base_commit': 'e3830f2' is not a full commit id/,
      ),
      expect.stringMatching(/:10: field '\(row\)': line is not valid JSON/),
      expect.stringMatching(
        /:11: \[minicalc__minicalc-3\] field 'FAIL_TO_PASS': is a string but not a JSON list/,
      ),
      expect.stringMatching(
        /:12: \[minicalc__minicalc-1\] field 'instance_id': duplicate task id 'minicalc__minicalc-1' \(first seen in row 1\)/,
      ),
    ]);
  });

  it("maps test ids to each language's runner: pytest, cargo, go test and jest", async () => {
    const { tasks } = await loadSwebench(FIXTURE);
    const [py, gym, rust, go, js] = tasks.map((t) => t.spec);
    expect(py).toMatchObject({
      profile: "python",
      language: "Python",
      network: "none",
      source: {
        kind: "git",
        url: join(dirname(FIXTURE), "minicalc"),
        rev: "e3830f2bf79af912656564a216558ac0febd97c4",
      },
      tests: {
        patch: "tests.patch",
        run: {
          kind: "suite",
          results: "pytest",
          command: inRowVenv(
            // tests/test_ops.py: named by an id, not a hidden test file: run when it exists
            `python3 -m pytest -rA -p no:cacheprovider tests/test_clamp.py $(for f in tests/test_ops.py; do [ -e "$f" ] && printf '%s ' "$f"; done)`,
          ),
          canary: { file: "tests/test_clamp.py", id: "tests/test_clamp.py::{name}" },
        },
      },
      solution: "solution.patch",
    });
    expect(py!.prompt).toMatch(/^clamp\(\) never returns its upper bound/);
    // SWE-Gym / Parquet style: the lists are JSON strings; owner/repo is cloned from GitHub
    expect(gym).toMatchObject({
      profile: "python",
      network: "required",
      source: { url: "https://github.com/acme/widgets" },
      tests: { run: { failToPass: ["tests/test_resize.py::test_aspect"], passToPass: [] } },
    });
    expect(rust).toMatchObject({
      profile: "rust",
      install: [], // the rust profile's default (cargo fetch) runs at snapshot build
      tests: { run: { kind: "suite", results: "libtest", canary: { file: "tests/zero.rs", id: "{name}" } } },
    });
    // Multi-SWE-bench names: fix_patch, f2p, p2p
    expect(go).toMatchObject({
      profile: "go",
      tests: {
        run: {
          kind: "suite",
          command: "GOFLAGS=-mod=mod go test -v -count=1 ./...",
          results: "gotest",
          failToPass: ["TestPopEmpty", "TestPop/after_wrap"],
          passToPass: ["TestPush"],
          canary: { file: "ring_test.go", id: "Test_{name}" },
        },
      },
    });
    expect(js).toMatchObject({
      profile: "node",
      tests: {
        run: {
          kind: "ids",
          command: "npx --no-install jest --ci --testNamePattern {test}",
          failToPass: ["pads by code points \\(emoji\\)"],
        },
      },
    });
  });

  it("reads the Parquet shape: FAIL_TO_PASS and PASS_TO_PASS as JSON-encoded strings", async () => {
    const rows = (await readFile(FIXTURE, "utf8"))
      .split("\n")
      .slice(0, 1)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const cols = [
      "instance_id",
      "repo",
      "base_commit",
      "problem_statement",
      "patch",
      "test_patch",
      "version",
      "created_at",
    ];
    const file = join(tmp, "rows.parquet");
    const buffer = parquetWriteBuffer({
      columnData: [
        // the repository by absolute path: the file is written away from the fixture's minicalc/
        ...cols.map((c) => ({
          name: c,
          data: rows.map((r) => (c === "repo" ? join(dirname(FIXTURE), String(r[c])) : String(r[c]))),
        })),
        { name: "FAIL_TO_PASS", data: rows.map((r) => JSON.stringify(r.FAIL_TO_PASS)) },
        { name: "PASS_TO_PASS", data: rows.map((r) => JSON.stringify(r.PASS_TO_PASS)) },
      ],
    });
    await writeFile(file, Buffer.from(buffer));
    expect(await detectDatasetSchema(file)).toBe("swebench");
    const d = await loadSwebench(file);
    expect(d.summary).toMatchObject({ format: "parquet", rows: 1, accepted: 1, rejected: 0 });
    expect(d.tasks[0]!.spec.tests.run).toMatchObject({
      failToPass: [
        "tests/test_clamp.py::test_clamp_keeps_the_upper_bound",
        "tests/test_clamp.py::test_clamp_above_the_range",
      ],
    });
  });

  it("tells the two schemas apart by the first row", async () => {
    expect(await detectDatasetSchema(FIXTURE)).toBe("swebench");
    expect(await detectDatasetSchema(SWE_AGENT)).toBe("swe-agent");
  });
});

describe("SWE-bench Verified shapes (verified-shapes.jsonl, our own rows)", () => {
  it("accepts django, sympy, junk-id, pylint/pytest and multi-language rows and rejects the rest by row and field", async () => {
    const d = await loadSwebench(SHAPES);
    expect(d.summary).toMatchObject({ rows: 9, accepted: 6, rejected: 3 });
    const byId = new Map(d.tasks.map((t) => [t.spec.id, t]));
    expect([...byId.keys()]).toEqual([
      "django__django-16041",
      "sympy__sympy-20590",
      "psf__requests-2317",
      "pylint-dev__pylint-4970",
      "pytest-dev__pytest-5631",
      "cli__cli-10139",
    ]);
    const django = byId.get("django__django-16041")!.spec;
    expect(django.tests.run).toMatchObject({
      kind: "suite",
      results: "django",
      command: inRowVenv(
        'PYTHONPATH="$PWD" python3 tests/runtests.py --settings=test_sqlite --parallel 1 --verbosity 2 forms_tests.tests.test_formsets',
      ),
      failToPass: [
        "test_empty_permitted_ignored_empty_form (forms_tests.tests.test_formsets.FormsFormsetTestCase)",
      ],
      passToPass: [
        "all_valid() validates all forms, even when some are invalid.",
        "test_valid (forms_tests.tests.test_formsets.AllValidTests)",
      ],
    });
    expect(django.metadata).toMatchObject({
      instance_id: "django__django-16041",
      repo: "django/django",
      version: "4.2",
      environment_setup_commit: "0fbdb9784da915fce5dcc1fe82bac9b4785749e5",
      created_at: "2022-09-09T10:07:29Z",
      hints_text: "Issue has been triaged.",
      install_source: `${SWEBENCH_SPECS_ORIGIN}: MAP_REPO_VERSION_TO_SPECS_PY['django/django']['4.2']`,
    });
    // its dependencies come from PyPI at snapshot build (tests/requirements/py3.txt, then the checkout)
    expect(django.network).toBe("required");
    expect(django.install).toEqual([
      VENV_CREATE,
      '. "$FLAKEGYM_DEPS/venv/bin/activate" && if [ -f tests/requirements/py3.txt ]; then python -m pip install -r tests/requirements/py3.txt; fi',
      `. "$FLAKEGYM_DEPS/venv/bin/activate" && { python -c 'import pytest' 2>/dev/null || python -m pip install 'pytest<8.4'; }`,
      '. "$FLAKEGYM_DEPS/venv/bin/activate" && python -m pip install -e .',
    ]);
    expect(byId.get("sympy__sympy-20590")!.spec.tests.run).toMatchObject({ kind: "suite", results: "sympy" });
    const requests = byId.get("psf__requests-2317")!;
    expect(requests.spec.tests.run).toMatchObject({
      passToPass: ["test_requests.py::RequestsTestCase::test_basic_building"],
    });
    expect(requests.notes?.[0]).toBe(
      "PASS_TO_PASS: dropped '[100%]' — pytest progress output, not a test id",
    );
    expect(requests.spec.metadata?.intake_notes).toMatch(/dropped '\[100%\]'/);
    expect(byId.get("pylint-dev__pylint-4970")!.spec.tests.run).toMatchObject({
      canary: { file: "tests/checkers/unittest_similar.py" },
    });
    const multi = byId.get("cli__cli-10139")!.spec;
    expect(multi).toMatchObject({
      profile: "go",
      prompt: "gh pr view --json fails on closed PRs\n\nSteps to reproduce...",
      source: { kind: "git", rev: "b".repeat(40) },
      tests: {
        run: { results: "gotest", failToPass: ["TestPRView_closed"], passToPass: ["TestPRView_open"] },
      },
      metadata: { instance_id: "cli__cli-10139", repo: "cli/cli" },
    });
    expect(d.rejected.map(formatRowError)).toEqual([
      expect.stringMatching(
        /:7: \[sympy__sympy-99999\] field 'FAIL_TO_PASS\.0': 'sympy\/core\/tests\/test_a\.py::test_a' is not a SymPy test name/,
      ),
      expect.stringMatching(
        /:8: \[acme__gone-1\] field 'repo_url': local repository .*no-such-clone does not exist; clone the repository there, fix the column, or pass --repo-mirror DIR/,
      ),
      expect.stringMatching(/:9: \[acme__junk-2\] field 'FAIL_TO_PASS': is empty once junk ids are dropped/),
    ]);
  });

  it("reads owner/repo from --repo-mirror DIR/owner/repo, and names a repository the mirror lacks", async () => {
    const mirror = join(tmp, "mirror");
    await mkdir(join(mirror, "django", "django"), { recursive: true });
    const d = await loadSwebench(SHAPES, { repoMirror: mirror });
    // the clone is local; the install facts still fetch django's requirements at snapshot build
    expect(d.tasks.find((t) => t.spec.id === "django__django-16041")!.spec).toMatchObject({
      network: "required",
      source: { kind: "git", url: join(mirror, "django", "django") },
    });
    expect(d.rejected.map(formatRowError)).toContainEqual(
      expect.stringMatching(
        /:2: \[sympy__sympy-20590\] field 'repo': 'sympy\/sympy' has no mirror: .*mirror\/sympy\/sympy does not exist/,
      ),
    );
    // a bare mirror named repo.git, or owner__repo, is found too
    await mkdir(join(mirror, "sympy", "sympy.git"), { recursive: true });
    await mkdir(join(mirror, "psf__requests"), { recursive: true });
    const e = await loadSwebench(SHAPES, { repoMirror: mirror });
    const url = (id: string) => e.tasks.find((t) => t.spec.id === id)?.spec.source;
    expect(url("sympy__sympy-20590")).toMatchObject({ url: join(mirror, "sympy", "sympy.git") });
    expect(url("psf__requests-2317")).toMatchObject({ url: join(mirror, "psf__requests") });
  });
});

describe("parseSwebenchRow", () => {
  const at = { file: "/data/rows.jsonl", row: 3 };
  it("rejects a test_runner that does not run the row's language, and rows that are not objects", () => {
    const r = parseSwebenchRow(
      {
        instance_id: "a__b-1",
        repo: "a/b",
        base_commit: "a".repeat(40),
        problem_statement: "x",
        patch: "diff --git a/x.py b/x.py\n",
        test_patch: "diff --git a/tests/test_x.py b/tests/test_x.py\n",
        FAIL_TO_PASS: ["tests/test_x.py::test_x"],
        test_runner: "cargo",
      },
      at,
    );
    expect(r).toMatchObject({
      ok: false,
      error: { row: 3, field: "test_runner", reason: "cargo does not run Python tests" },
    });
    // an unknown runner id fails by row and field, naming the runners and the default
    const bad = parseSwebenchRow(
      {
        instance_id: "a__b-2",
        repo: "a/b",
        version: "1",
        install: [],
        base_commit: "a".repeat(40),
        problem_statement: "x",
        patch: "diff --git a/x.py b/x.py\n",
        test_patch: "diff --git a/tests/test_x.py b/tests/test_x.py\n",
        FAIL_TO_PASS: ["tests/test_x.py::test_x"],
        test_runner: "nose",
      },
      at,
    );
    expect(bad).toMatchObject({
      ok: false,
      error: {
        row: 3,
        field: "test_runner",
        id: "a__b-2",
        reason:
          "'nose' is not one of pytest, django, sympy, cargo, go, node, jest, vitest, mocha: set one of them, or drop the column to use the Python default (pytest)",
      },
    });
    expect(parseSwebenchRow([1], at)).toMatchObject({
      ok: false,
      error: { field: "(row)", reason: "expected an object, got an array" },
    });
  });

  it("names the renamed columns SWE-bench's way, a SWE-bench name winning", () => {
    expect(canonicalColumns({ repo_name: "a/b", fix_patch: "p", patch: "q" })).toMatchObject({
      repo: "a/b",
      patch: "q",
    });
  });

  it("makes task ids from instance ids and infers the language from the test files", () => {
    expect(taskIdOf("Project-MONAI__MONAI-5908")).toBe("project-monai__monai-5908");
    expect(rowLanguage(undefined, ["tests/a_test.go", "README.md", "b_test.go"])).toBe("Go");
    expect(rowLanguage("Rust", ["tests/x.py"])).toBe("Rust");
    expect(rowLanguage(undefined, ["README.md"])).toBeUndefined();
  });
});

describe("writeTaskFolder", () => {
  it("writes a catalog folder the catalog loader accepts, and refuses to overwrite one", async () => {
    const { tasks } = await loadSwebench(FIXTURE);
    const catalog = join(tmp, "catalog");
    const dir = await writeTaskFolder(catalog, tasks[0]!);
    const loaded = await loadTaskDir(dir);
    expect(loaded.spec).toEqual(tasks[0]!.spec);
    expect(await readFile(loaded.paths.solution, "utf8")).toContain("+    if x > hi:");
    await expect(writeTaskFolder(catalog, tasks[0]!)).rejects.toThrow(
      /exists already|cannot write task folder/,
    );
    await writeTaskFolder(catalog, tasks[0]!, { replace: true });
  });
});

describe("datasetAsCatalog", () => {
  it("imports the first --limit tasks of a SWE-bench file as a catalog, and leaves swe-agent files to rollout", async () => {
    const dir = join(tmp, "run.tasks");
    const notes: string[] = [];
    const r = await datasetAsCatalog(FIXTURE, dir, { limit: 2, note: (l) => notes.push(l) });
    expect(r).toEqual({ catalog: dir, tasks: ["minicalc__minicalc-1", "acme__widgets-7"] });
    expect((await loadCatalog(dir)).map((t) => t.spec.id)).toEqual([
      "acme__widgets-7",
      "minicalc__minicalc-1",
    ]);
    expect(notes.filter((n) => n.startsWith("rejected (skipped): "))).toHaveLength(6);
    expect(await datasetAsCatalog(SWE_AGENT, join(tmp, "none"), {})).toBeUndefined();
  });
});

/** The first fixture row (minicalc, pytest), read as the parser reads it. */
async function fixtureRow(): Promise<SwebenchRow> {
  const first = JSON.parse((await readFile(FIXTURE, "utf8")).split("\n")[0]!) as unknown;
  const read = readSwebenchRow(first);
  if (!("row" in read)) throw new Error(`fixture row 1 no longer reads: ${read.field}: ${read.reason}`);
  return read.row;
}

describe("parseSwebenchRow's steps, one field group each", () => {
  it("readSwebenchRow: a non-object, a schema problem with the row's id, a missing test_patch with its hint", async () => {
    expect(readSwebenchRow([1])).toEqual({ field: "(row)", reason: "expected an object, got an array" });
    // a `null` line is named as null, not as an object
    expect(readSwebenchRow(null)).toEqual({ field: "(row)", reason: "expected an object, got null" });
    const row = await fixtureRow();
    expect(readSwebenchRow({ ...row, base_commit: 7 })).toMatchObject({
      field: "base_commit",
      id: "minicalc__minicalc-1",
    });
    const { test_patch: _, ...noTests } = row;
    const missing = readSwebenchRow(noTests);
    expect(missing).toMatchObject({ field: "test_patch", id: "minicalc__minicalc-1" });
    expect("reason" in missing && missing.reason).toMatch(
      /^missing: flakegym needs the hidden tests as a patch/,
    );
    expect(readSwebenchRow({ repo: "a/b" })).not.toHaveProperty("id");
  });

  it("rowTextProblem: task id, full commit id, non-empty prompt and patches", async () => {
    const row = await fixtureRow();
    expect(rowTextProblem(row)).toBeUndefined();
    expect(rowTextProblem({ ...row, instance_id: "!!!" })).toEqual({
      field: "instance_id",
      reason: "'!!!' leaves no usable task id (letters, digits, '.', '_', '-')",
    });
    expect(rowTextProblem({ ...row, base_commit: "" })?.reason).toMatch(/git rev-parse <rev> in a clone/);
    expect(rowTextProblem({ ...row, problem_statement: " " })).toEqual({
      field: "problem_statement",
      reason: "is empty: the agent's prompt comes from it",
    });
    expect(rowTextProblem({ ...row, patch: "\n" })?.reason).toBe(
      "is empty: give the reference solution as a unified diff",
    );
    expect(rowTextProblem({ ...row, test_patch: "" })?.reason).toBe(
      "is empty: give the hidden tests as a unified diff",
    );
  });

  it("testListsOf: JSON-encoded lists decode, junk ids are dropped with a note, FAIL_TO_PASS must keep one", () => {
    expect(testListsOf({ FAIL_TO_PASS: '["t.py::a"]', PASS_TO_PASS: null })).toEqual({
      f2p: ["t.py::a"],
      p2p: [],
      notes: [],
    });
    const junk = testListsOf({ FAIL_TO_PASS: ["t.py::a", "[100%]"], PASS_TO_PASS: ["[ 50%]"] });
    expect(junk).toMatchObject({ f2p: ["t.py::a"], p2p: [] });
    expect("notes" in junk && junk.notes).toEqual([
      "FAIL_TO_PASS: dropped '[100%]' — pytest progress output, not a test id",
      "PASS_TO_PASS: dropped '[ 50%]' — pytest progress output, not a test id",
    ]);
    expect(testListsOf({ FAIL_TO_PASS: ["[100%]"], PASS_TO_PASS: [] })).toEqual({
      field: "FAIL_TO_PASS",
      reason: "is empty once junk ids are dropped: a task needs a test that the fix makes pass",
    });
    expect(testListsOf({ FAIL_TO_PASS: [], PASS_TO_PASS: "{" })).toMatchObject({
      field: "PASS_TO_PASS",
      reason: expect.stringMatching(/^is a string but not a JSON list/),
    });
  });

  it("rowPatchFiles: the test patch's files; either patch without a file header is named", async () => {
    const row = await fixtureRow();
    expect(rowPatchFiles(row)).toEqual(["tests/test_clamp.py"]);
    expect(rowPatchFiles({ ...row, test_patch: "just text" })).toMatchObject({ field: "test_patch" });
    expect(rowPatchFiles({ ...row, patch: "just text" })).toMatchObject({
      field: "patch",
      reason: expect.stringMatching(/give the reference solution as `git diff` prints it$/),
    });
  });

  it("rowRunner: the language default, the repository's runner, the row's test_runner when it fits", () => {
    const rust = { language: "Rust", repo: "a/b", test_runner: null };
    expect(rowRunner(rust, [])).toEqual({ language: "Rust", runner: "cargo" });
    expect(rowRunner({ ...rust, language: null }, ["t/test_x.py"])).toEqual({
      language: "Python",
      runner: "pytest",
    });
    expect(
      rowRunner({ language: null, repo: "django/django", test_runner: null }, ["tests/x/tests.py"]),
    ).toMatchObject({
      runner: "django",
    });
    expect(rowRunner({ ...rust, language: "COBOL" }, [])).toMatchObject({
      field: "language",
      reason: expect.stringMatching(/^COBOL is not supported: flakegym runs the tests of /),
    });
    expect(rowRunner({ ...rust, language: null }, ["README"])).toMatchObject({
      field: "test_patch",
      reason: expect.stringMatching(/^no language: name it in a 'language' column/),
    });
    expect(rowRunner({ ...rust, test_runner: "pytest" }, [])).toEqual({
      field: "test_runner",
      reason: "pytest does not run Rust tests",
    });
    expect(rowRunner({ ...rust, test_runner: "nope" }, [])).toMatchObject({
      field: "test_runner",
      reason: expect.stringMatching(
        /^'nope' is not one of .*drop the column to use the Rust default \(cargo\)$/,
      ),
    });
  });

  it("runnerTestIds: Django ids become labels; an id the runner cannot select is named by index", () => {
    const lists = { f2p: ["test_a (app.tests.T.test_a)"], p2p: [], notes: ["kept"] };
    expect(runnerTestIds("django", lists)).toEqual({
      f2p: ["test_a (app.tests.T)"],
      p2p: [],
      notes: ["kept"],
    });
    expect(runnerTestIds("pytest", { ...lists, p2p: ["t.py::ok", "bad id"] })).toMatchObject({
      field: "FAIL_TO_PASS.0",
      reason: expect.stringMatching(/^'test_a \(app.tests.T.test_a\)' is a django-style id/),
    });
    expect(runnerTestIds("cargo", { f2p: ["m::t"], p2p: ["m::ok", "no good"], notes: [] })).toMatchObject({
      field: "PASS_TO_PASS.1",
    });
  });

  it("suiteRun: a fetched Go repository reads the module cache, a Python suite runs in the row's venv", () => {
    const suite = {
      kind: "suite" as const,
      command: "run-tests",
      results: "pytest" as const,
      failToPass: ["t"],
      passToPass: [],
      canary: { file: "t.py", prepend: "", append: "", id: "c" },
    };
    expect(suiteRun(suite, "go", "required")).toMatchObject({ command: "GOFLAGS=-mod=mod run-tests" });
    expect(suiteRun(suite, "go", "none")).toBe(suite);
    expect(suiteRun(suite, "pytest", "none")).toMatchObject({ command: inRowVenv("run-tests") });
    expect(suiteRun(suite, "cargo", "required")).toBe(suite);
  });
});
