import { isAbsolute, resolve } from "node:path";
import { z } from "zod";
import { touchedPaths } from "../text/diff.js";
import { jsonKindOf } from "../text/json-kind.js";
import { classifyRepo, type RowError } from "./dataset-row.js";
import { unbuildableReason } from "./swebench-buildable.js";
import { envSpecOf, inRowVenv, installOfEnvSpec } from "./swebench-env-specs.js";
import { HTTPBIN_NOTE, httpbinInstall, wantsHttpbin, withHttpbin } from "./swebench-httpbin.js";
import { type LogParser, logParserOf } from "./swebench-log-parsers.js";
import { harnessSuiteCommand, testCommandEnv } from "./swebench-test-tools.js";
import { TaskSpec, type TestRun } from "./task-spec.js";
import {
  djangoId,
  isJunkTestId,
  languageOfPath,
  profileOfRunner,
  REPO_RUNNERS,
  SUPPORTED_LANGUAGES,
  TestRunner,
  testIdProblem,
  testRunOf,
} from "./test-runners.js";

/**
 * SWE-bench-family rows (SWE-bench, Verified, Lite, SWE-Gym; the renamed columns of SWE-smith,
 * R2E-Gym and Multi-SWE-bench) → catalog-style tasks whose reward is their hidden tests: the row's
 * `test_patch` adds them, `FAIL_TO_PASS` / `PASS_TO_PASS` name them, `patch` is the reference
 * solution. Pure: the caller reads rows (dataset.ts) and writes task folders (task-dir.ts).
 */

/** Other names the family uses for a column, mapped to SWE-bench's. */
export const COLUMN_ALIASES: Readonly<Record<string, string>> = {
  repo_name: "repo", // R2E-Gym
  gold_patch: "patch",
  fix_patch: "patch", // Multi-SWE-bench
  fail_to_pass: "FAIL_TO_PASS",
  pass_to_pass: "PASS_TO_PASS",
  f2p: "FAIL_TO_PASS",
  p2p: "PASS_TO_PASS",
};

/** A list column: a list of strings, or that list JSON-encoded (the Parquet files). */
const TestList = z
  .union([z.array(z.string()), z.string()])
  .nullish()
  .describe("list of test ids, or that list as a JSON string");

const text = z.string().nullish();

/** One row of the SWE-bench schema; other columns are allowed and ignored. */
export const SwebenchRow = z
  .object({
    instance_id: z.string().min(1).describe("`owner__repo-<number>`; becomes the task id (lower-cased)"),
    repo: z.string().min(1).describe("`owner/repo` on GitHub, a git URL, or a local path (tests, mirrors)"),
    repo_url: text.describe("flakegym extension: where to clone `repo` from instead of GitHub"),
    base_commit: z.string().describe("full commit id the task starts from"),
    problem_statement: z.string().describe("the issue text: the agent's prompt"),
    patch: z.string().describe("the reference solution (unified diff)"),
    test_patch: z.string().describe("adds the hidden tests (unified diff)"),
    FAIL_TO_PASS: TestList,
    PASS_TO_PASS: TestList,
    environment_setup_commit: text.describe("kept for provenance"),
    version: z.union([z.string(), z.number()]).nullish().describe("kept for provenance"),
    hints_text: text.describe("kept for provenance; not shown to the agent"),
    created_at: z.union([z.string(), z.number(), z.date()]).nullish().describe("kept for provenance"),
    language: text.describe("GitHub language name (Multi-SWE-bench); else inferred from test_patch"),
    test_runner: text.describe(`flakegym extension: ${TestRunner.description}`),
    install: z
      .union([z.array(z.string().min(1)), z.string()])
      .nullish()
      .describe("flakegym extension: commands that install dependencies in the snapshot"),
  })
  .passthrough();
export type SwebenchRow = z.infer<typeof SwebenchRow>;

/** A row (or a Harbor directory) turned into a task: its spec and the files the spec names. */
export interface IntakeTask {
  readonly spec: TaskSpec;
  readonly files: Readonly<Record<string, string | Buffer>>;
  /** Where it came from: dataset file and row. */
  readonly source: { readonly file: string; readonly row: number };
  /** What intake changed on the way in (e.g. junk test ids dropped); printed by `tasks check`/`import`. */
  readonly notes?: readonly string[];
  /** Those of `files` written executable (task-dir.ts TaskFolder). */
  readonly executables?: readonly string[];
}

/** Options of {@link parseSwebenchRow}. */
export interface SwebenchIntakeOptions {
  /**
   * A directory of local git mirrors: a row's `owner/repo` is read from `<dir>/owner/repo`
   * (loadSwebench also takes `<dir>/owner/repo.git` or `<dir>/owner__repo` when that is what exists).
   */
  readonly repoMirror?: string;
}

export type IntakeResult = { ok: true; task: IntakeTask } | { ok: false; error: RowError };

/** Whether a raw row is in the SWE-bench family (an `instance_id`, or Multi-SWE-bench's `org` + `f2p_tests`). */
export function isSwebenchRow(raw: unknown): boolean {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return false;
  return "instance_id" in raw || ("org" in raw && "f2p_tests" in raw);
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The row with aliased columns renamed to SWE-bench's (a SWE-bench name wins), and the
 * multi-language schema (Multi-SWE-bench: `org`, `repo`, `number`, `base.sha`, `fix_patch`,
 * `f2p_tests` / `p2p_tests` as maps from test name to its results, `resolved_issues`) read into
 * SWE-bench's columns. Pure.
 */
export function canonicalColumns(raw: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...raw };
  for (const [alias, name] of Object.entries(COLUMN_ALIASES)) {
    if (out[name] == null && raw[alias] != null) out[name] = raw[alias];
  }
  const org = typeof raw.org === "string" ? raw.org : undefined;
  if (org !== undefined && typeof raw.repo === "string" && !raw.repo.includes("/")) {
    out.repo = `${org}/${raw.repo}`;
    if (out.instance_id == null && raw.number != null)
      out.instance_id = `${org}__${raw.repo}-${String(raw.number)}`;
  }
  if (out.base_commit == null && isRecord(raw.base) && typeof raw.base.sha === "string")
    out.base_commit = raw.base.sha;
  for (const [col, name] of [
    ["f2p_tests", "FAIL_TO_PASS"],
    ["p2p_tests", "PASS_TO_PASS"],
  ] as const) {
    if (out[name] == null && isRecord(raw[col])) out[name] = Object.keys(raw[col]).sort();
  }
  if (out.problem_statement == null) {
    const issues = Array.isArray(raw.resolved_issues) ? raw.resolved_issues.filter(isRecord) : [];
    const text = issues
      .map((i) => [i.title, i.body].filter((x) => typeof x === "string" && x.trim() !== "").join("\n\n"))
      .filter((t) => t !== "");
    if (text.length > 0) out.problem_statement = text.join("\n\n");
    else if (typeof raw.title === "string")
      out.problem_statement = [raw.title, typeof raw.body === "string" ? raw.body : ""].join("\n\n").trim();
  }
  return out;
}

/** A task id from an instance id: lower case, characters a task folder can be named with. Pure. */
export function taskIdOf(instanceId: string): string {
  return instanceId
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, "-")
    .replace(/^[^a-z0-9]+/, "");
}

function listOf(v: string | string[] | null | undefined): string[] | string {
  if (v == null) return [];
  if (Array.isArray(v)) return v;
  if (v.trim() === "") return [];
  try {
    const decoded: unknown = JSON.parse(v);
    const r = z.array(z.string()).safeParse(decoded);
    return r.success
      ? r.data
      : "is a JSON string but not a list of strings: give a list of test ids, or that list JSON-encoded";
  } catch (err) {
    return `is a string but not a JSON list (${(err as Error).message}): give a list of test ids, or that list JSON-encoded`;
  }
}

/**
 * The language a row's tests are written in: its `language` column, else its test files'
 * majority; a test patch of data files only (django__django-10097's `.txt` lists) falls back to
 * the repository's known language (one the install facts or own runners know is Python), then
 * to the gold patch's files' majority. Pure.
 */
export function rowLanguage(
  language: string | null | undefined,
  testFiles: readonly string[],
  fallback: { readonly repo?: string; readonly patchFiles?: readonly string[] } = {},
): string | undefined {
  if (language != null && language.trim() !== "") return language.trim();
  return (
    majorityLanguage(testFiles) ??
    (fallback.repo !== undefined && isKnownPythonRepo(fallback.repo) ? "Python" : undefined) ??
    majorityLanguage(fallback.patchFiles ?? [])
  );
}

function majorityLanguage(files: readonly string[]): string | undefined {
  const counts = new Map<string, number>();
  for (const f of files) {
    const l = languageOfPath(f);
    if (l) counts.set(l, (counts.get(l) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0];
}

/** A repository SWE-bench's Python facts or our own runners know. Pure. */
function isKnownPythonRepo(repo: string): boolean {
  const name = repo.replace(/\.git$/, "").toLowerCase();
  const facts = envSpecOf(name, undefined);
  // a known repository without a version is field `version`; an unknown one is field `repo`
  return REPO_RUNNERS[name] !== undefined || facts.ok || facts.field === "version";
}

/**
 * The row's install commands: its `install` column when it has one (run with network at build, like
 * the facts' installs: `fetches`); for a Python row, the install
 * facts of its repository and version (swebench-env-specs.ts: a venv with its packages from PyPI,
 * so the snapshot build needs network — `fetches`); otherwise none (the profile's default environment install applies at snapshot build). A Python row
 * of a repository the facts know but at a version they do not list is rejected (field `version`);
 * one of a repository they do not know keeps no install, with a note saying so. Pure.
 */
export function installOf(
  row: Pick<SwebenchRow, "repo" | "version" | "install">,
  runner: TestRunner,
):
  | { install: string[]; notes: string[]; fetches: boolean; source?: string; python?: string }
  | { field: string; reason: string } {
  if (row.install != null) {
    const l = Array.isArray(row.install) ? row.install : listOf(row.install);
    if (typeof l === "string") return { field: "install", reason: l };
    // the row's own commands may fetch (pip, cargo fetch): the build gets network, the sandboxes after it never do
    return { install: l, notes: [], fetches: l.length > 0, source: "the row's install column" };
  }
  // other languages: none of the row's own — the profile's default environment install runs at
  // snapshot build (snapshots/env-install.ts: cargo fetch, go mod download, npm ci)
  if (profileOfRunner(runner) !== "python") return { install: [], notes: [], fetches: false };
  const found = envSpecOf(row.repo, row.version);
  const unbuildable = found.ok ? unbuildableReason(row.repo, String(row.version), found.spec) : undefined;
  if (unbuildable !== undefined) return { field: "version", reason: unbuildable };
  if (found.ok) {
    const made = installOfEnvSpec(row.repo, found.spec);
    const httpbin = wantsHttpbin(row.repo, row.version);
    return {
      install: httpbin ? [...made.install, ...httpbinInstall()] : made.install,
      notes: httpbin ? [...made.notes, HTTPBIN_NOTE] : made.notes,
      fetches: true,
      source: found.source,
      python: found.spec.python,
    };
  }
  if (found.field === "version") return { field: found.field, reason: found.reason };
  return {
    install: [],
    notes: [
      `repo: ${found.reason}; without one the python profile's default install runs (a venv with the repository's declared dependencies)`,
    ],
    fetches: false,
  };
}

const supportedNames = () => Object.keys(SUPPORTED_LANGUAGES).join(", ");

/** What is wrong with a row: the field and why (the caller adds file, row and id). */
type RowProblem = { readonly field: string; readonly reason: string };

const isRowProblem = (x: object): x is RowProblem => "field" in x && "reason" in x;

/** A row's hidden-test ids once junk is dropped, and what intake changed on the way. */
interface TestLists {
  readonly f2p: string[];
  readonly p2p: string[];
  readonly notes: string[];
}

/** A row checked field group by field group: everything its task spec is built from. */
interface RowDraft {
  readonly row: SwebenchRow;
  readonly taskId: string;
  readonly language: string;
  readonly runner: TestRunner;
  readonly lists: TestLists;
  readonly repo: { url: string; network: "none" | "required" };
  readonly testFiles: string[];
  readonly run: TestRun;
  readonly env: Exclude<ReturnType<typeof installOf>, RowProblem>;
}

/**
 * Validates one raw SWE-bench-family row and turns it into a task, or names the field that is
 * wrong and why. `at.file` is the dataset file: relative local repo paths are resolved against
 * its directory. Pure.
 */
export function parseSwebenchRow(
  raw: unknown,
  at: { file: string; row: number },
  opts: SwebenchIntakeOptions = {},
): IntakeResult {
  const fail = (p: RowProblem, id: string | undefined): IntakeResult => ({
    ok: false,
    error: {
      file: at.file,
      row: at.row,
      field: p.field,
      reason: p.reason,
      ...(id === undefined ? {} : { id }),
    },
  });
  const read = readSwebenchRow(raw);
  if ("reason" in read) return fail(read, read.id);
  const draft = draftOfRow(read.row, at.file, opts);
  if (isRowProblem(draft)) return fail(draft, read.row.instance_id);
  const spec = swebenchSpec(draft, at);
  if (isRowProblem(spec)) return fail(spec, read.row.instance_id);
  const { row, lists } = draft;
  return {
    ok: true,
    task: {
      spec,
      files: { "solution.patch": ensureNewline(row.patch), "tests.patch": ensureNewline(row.test_patch) },
      source: at,
      ...(lists.notes.length > 0 ? { notes: lists.notes } : {}),
    },
  };
}

/**
 * A raw value → a schema-valid row (aliased columns renamed), or the first schema problem with the
 * row's instance id when it has one. Pure.
 */
export function readSwebenchRow(raw: unknown): { row: SwebenchRow } | (RowProblem & { id?: string }) {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    return {
      field: "(row)",
      reason: `expected an object, got ${jsonKindOf(raw)}`,
    };
  }
  const cols = canonicalColumns(raw as Record<string, unknown>);
  const parsed = SwebenchRow.safeParse(cols);
  if (parsed.success) return { row: parsed.data };
  const issue = parsed.error.issues[0]!;
  const field = issue.path.length > 0 ? issue.path.join(".") : "(row)";
  const top = issue.path[0];
  const absent = typeof top === "string" && cols[top] == null && issue.path.length === 1;
  const hint =
    field === "test_patch" && absent
      ? ": flakegym needs the hidden tests as a patch (SWE-smith and R2E-Gym rows keep them in their images; export them with a test_patch first)"
      : "";
  const reason = `${absent ? "missing" : issue.message}${hint}`;
  return typeof cols.instance_id === "string" ? { field, reason, id: cols.instance_id } : { field, reason };
}

/** The row's checks in the order their problems are reported, each over one field group. Pure. */
function draftOfRow(
  row: SwebenchRow,
  datasetFile: string,
  opts: SwebenchIntakeOptions,
): RowDraft | RowProblem {
  const textProblem = rowTextProblem(row);
  if (textProblem) return textProblem;
  const lists = testListsOf(row);
  if (isRowProblem(lists)) return lists;
  const repo = repoOf(row, datasetFile, opts.repoMirror);
  if (isRowProblem(repo)) return repo;
  const testFiles = rowPatchFiles(row);
  if (isRowProblem(testFiles)) return testFiles;
  const chosen = rowRunner(row, testFiles);
  if (isRowProblem(chosen)) return chosen;
  const { runner } = chosen;
  const ids = runnerTestIds(runner, lists, runner === "pytest" ? logParserOf(row.repo) : undefined);
  if (isRowProblem(ids)) return ids;
  const run = testRunOf({ runner, failToPass: ids.f2p, passToPass: ids.p2p, testFiles });
  if (isRowProblem(run)) return run;
  const env = installOf(row, runner);
  if (isRowProblem(env)) return env;
  return {
    row,
    taskId: taskIdOf(row.instance_id),
    ...chosen,
    lists: { ...ids, notes: [...ids.notes, ...env.notes] },
    repo,
    testFiles,
    run: withLogParser(
      withServices(suiteRun(withTestEnv(run.run, row), runner, repo.network), row),
      row.repo,
    ),
    env,
  };
}

/** The instance id, base commit, prompt and both patches: usable and not empty. Pure. */
export function rowTextProblem(row: SwebenchRow): RowProblem | undefined {
  const id = row.instance_id;
  if (!/^[a-z0-9][a-z0-9._-]*$/.test(taskIdOf(id))) {
    return {
      field: "instance_id",
      reason: `'${id}' leaves no usable task id (letters, digits, '.', '_', '-')`,
    };
  }
  if (!/^[0-9a-f]{40}$/i.test(row.base_commit)) {
    return {
      field: "base_commit",
      reason: `'${row.base_commit}' is not a full commit id (40 hex digits): give the whole id (git rev-parse ${row.base_commit || "<rev>"} in a clone prints it)`,
    };
  }
  for (const [field, v] of [
    ["problem_statement", row.problem_statement],
    ["patch", row.patch],
    ["test_patch", row.test_patch],
  ] as const) {
    if (v.trim() === "")
      return {
        field,
        reason:
          field === "problem_statement"
            ? "is empty: the agent's prompt comes from it"
            : `is empty: give the ${field === "patch" ? "reference solution" : "hidden tests"} as a unified diff`,
      };
  }
  return undefined;
}

/** FAIL_TO_PASS and PASS_TO_PASS as lists, junk ids dropped (with a note); FAIL_TO_PASS not empty. Pure. */
export function testListsOf(row: Pick<SwebenchRow, "FAIL_TO_PASS" | "PASS_TO_PASS">): TestLists | RowProblem {
  const notes: string[] = [];
  const lists: Record<"FAIL_TO_PASS" | "PASS_TO_PASS", string[]> = { FAIL_TO_PASS: [], PASS_TO_PASS: [] };
  for (const field of ["FAIL_TO_PASS", "PASS_TO_PASS"] as const) {
    const l = listOf(row[field]);
    if (typeof l === "string") return { field, reason: l };
    const junk = l.filter(isJunkTestId);
    if (junk.length > 0) {
      notes.push(
        `${field}: dropped ${junk.map((j) => `'${j}'`).join(", ")} — pytest progress output, not a test id`,
      );
    }
    lists[field] = l.filter((t) => !isJunkTestId(t));
  }
  if (lists.FAIL_TO_PASS.length === 0)
    return {
      field: "FAIL_TO_PASS",
      reason: `is empty${notes.length > 0 ? " once junk ids are dropped" : ""}: a task needs a test that the fix makes pass`,
    };
  return { f2p: lists.FAIL_TO_PASS, p2p: lists.PASS_TO_PASS, notes };
}

/** The files the hidden tests touch; both patches must be unified diffs. Pure. */
export function rowPatchFiles(row: Pick<SwebenchRow, "patch" | "test_patch">): string[] | RowProblem {
  const testFiles = touchedPaths(row.test_patch);
  if (testFiles.length === 0)
    return {
      field: "test_patch",
      reason:
        "is not a unified diff (no `diff --git` file header): give the hidden tests as `git diff` prints them",
    };
  if (touchedPaths(row.patch).length === 0) {
    return {
      field: "patch",
      reason:
        "is not a unified diff (no `diff --git` file header): give the reference solution as `git diff` prints it",
    };
  }
  return testFiles;
}

/**
 * The row's language and test runner: the language's default, the repository's own runner when it
 * runs the same profile, or the row's `test_runner` column when that runs the language. Pure.
 */
export function rowRunner(
  row: Pick<SwebenchRow, "language" | "repo" | "test_runner"> & { readonly patch?: string },
  testFiles: readonly string[],
): { language: string; runner: TestRunner } | RowProblem {
  const language = rowLanguage(row.language, testFiles, {
    repo: row.repo,
    patchFiles: row.patch === undefined ? [] : touchedPaths(row.patch),
  });
  const langField = row.language ? "language" : "test_patch";
  if (language === undefined) {
    return {
      field: langField,
      reason: `no language: name it in a 'language' column (supported: ${supportedNames()})`,
    };
  }
  const defaultRunner = SUPPORTED_LANGUAGES[language.toLowerCase()];
  if (defaultRunner === undefined) {
    return {
      field: langField,
      reason: `${language} is not supported: flakegym runs the tests of ${supportedNames()} (pytest, cargo test, go test, node:test/jest/vitest/mocha)`,
    };
  }
  const repoRunner = REPO_RUNNERS[row.repo.replace(/\.git$/, "").toLowerCase()];
  const runner: TestRunner =
    repoRunner !== undefined && profileOfRunner(repoRunner) === profileOfRunner(defaultRunner)
      ? repoRunner
      : defaultRunner;
  if (!row.test_runner) return { language, runner };
  const r = TestRunner.safeParse(row.test_runner);
  if (!r.success)
    return {
      field: "test_runner",
      reason: `'${row.test_runner}' is not one of ${TestRunner.options.join(", ")}: set one of them, or drop the column to use the ${language} default (${runner})`,
    };
  if (profileOfRunner(r.data) !== profileOfRunner(defaultRunner)) {
    return { field: "test_runner", reason: `${r.data} does not run ${language} tests` };
  }
  return { language, runner: r.data };
}

/**
 * A suite run with the environment assignments SWE-bench's test command for the row's
 * repository and version starts with, and run through tox where the harness runs it so
 * (swebench-test-tools.ts), when the facts know them. Pure.
 */
export function withTestEnv(run: TestRun, row: Pick<SwebenchRow, "repo" | "version" | "install">): TestRun {
  if (run.kind !== "suite" || row.install != null) return run;
  const found = envSpecOf(row.repo, row.version);
  if (!found.ok) return run;
  const env = testCommandEnv(found.spec.test_cmd);
  const command = harnessSuiteCommand(run.command, found.spec.test_cmd);
  return { ...run, command: env === "" ? command : `${env} ${command}` };
}

/**
 * A suite run with the services its row's tests reach under SWE-bench's harness (an httpbin on
 * loopback for requests before 2.10: swebench-httpbin.ts); a row with its own install column gets
 * none. Pure.
 */
export function withServices(run: TestRun, row: Pick<SwebenchRow, "repo" | "version" | "install">): TestRun {
  if (run.kind !== "suite" || row.install != null || !wantsHttpbin(row.repo, row.version)) return run;
  return { ...run, command: withHttpbin(run.command) };
}

/**
 * A pytest suite read as SWE-bench's harness reads the row's repository (its ids were recorded
 * through that reading: swebench-log-parsers.ts). Pure.
 */
export function withLogParser(run: TestRun, repo: string): TestRun {
  if (run.kind !== "suite" || run.results !== "pytest") return run;
  return { ...run, logParser: logParserOf(repo) };
}

/**
 * The test ids in the runner's spelling (Django's labels), each one the runner can select; a
 * repository whose log reading keeps spaces in ids (`pytest-spaced`) may have them. Pure.
 */
export function runnerTestIds(
  runner: TestRunner,
  lists: TestLists,
  parser?: LogParser,
): TestLists | RowProblem {
  const spell = (ids: string[]) => (runner === "django" ? ids.map(djangoId) : ids);
  const out = { ...lists, f2p: spell(lists.f2p), p2p: spell(lists.p2p) };
  for (const [field, list] of [
    ["FAIL_TO_PASS", out.f2p],
    ["PASS_TO_PASS", out.p2p],
  ] as const) {
    for (const [i, t] of list.entries()) {
      const spaced = parser === "pytest-spaced" && /^[^\s:]+\.py::\S.*$/.test(t);
      const problem = spaced ? undefined : testIdProblem(runner, t);
      if (problem) return { field: `${field}.${i}`, reason: `'${t}' ${problem}` };
    }
  }
  return out;
}

/**
 * A suite run's command as the sandbox runs it: a fetched Go repository reads modules from the
 * cache the install filled (the sandbox's GOFLAGS=-mod=vendor suits vendored and dependency-free
 * modules only); a Python suite runs in the row's venv. Pure.
 */
export function suiteRun(run: TestRun, runner: TestRunner, repoNetwork: "none" | "required"): TestRun {
  if (run.kind !== "suite") return run;
  if (runner === "go" && repoNetwork === "required")
    return { ...run, command: `GOFLAGS=-mod=mod ${run.command}` };
  if (profileOfRunner(runner) === "python") return { ...run, command: inRowVenv(run.command) };
  return run;
}

/** The task spec of a checked row, or the spec's own first problem. Pure. */
function swebenchSpec(d: RowDraft, at: { file: string; row: number }): TaskSpec | RowProblem {
  const { row, env } = d;
  const id = row.instance_id;
  const outside = untouchedCanaryFile(d.run, d.testFiles);
  const notes =
    outside === undefined
      ? d.lists.notes
      : [
          ...d.lists.notes,
          `test_patch: adds no test code; the graded tests and the canary live in ${outside}, which it leaves alone: protected (the agent's edits to it are dropped before scoring)`,
        ];
  const firstLine = row.problem_statement.trim().split("\n")[0]!.slice(0, 100);
  const spec = TaskSpec.safeParse({
    $comment: `SWE-bench-style row ${at.row} of ${at.file.split("/").pop()}: instance_id ${id}, repo ${row.repo}`,
    id: d.taskId,
    summary: `${row.repo}: ${firstLine}`,
    prompt: row.problem_statement.trim(),
    profile: profileOfRunner(d.runner),
    language: d.language,
    network: env.fetches ? "required" : d.repo.network,
    source: { kind: "git", url: d.repo.url, rev: row.base_commit.toLowerCase() },
    install: env.install,
    tests: { patch: "tests.patch", run: d.run },
    solution: "solution.patch",
    ...(outside === undefined ? {} : { protected: [outside] }),
    metadata: {
      ...rowMetadata(row, notes),
      ...(env.source ? { install_source: env.source } : {}),
      ...(env.python ? { python_version: env.python } : {}),
    },
  });
  if (spec.success) return spec.data;
  const issue = spec.error.issues[0]!;
  return { field: issue.path.join(".") || "(row)", reason: issue.message };
}

/** The canary's file when the test patch does not add it (a data-only test patch), else undefined. Pure. */
export function untouchedCanaryFile(run: TestRun, testFiles: readonly string[]): string | undefined {
  return run.kind === "suite" && !testFiles.includes(run.canary.file) ? run.canary.file : undefined;
}

/** The row's provenance columns, as text, for the task's `metadata`. Pure. */
function rowMetadata(row: SwebenchRow, notes: readonly string[]): Record<string, string> {
  const out: Record<string, string> = { instance_id: row.instance_id, repo: row.repo };
  const put = (k: string, v: string | number | Date | null | undefined) => {
    if (v == null) return;
    out[k] = v instanceof Date ? v.toISOString() : String(v);
  };
  put("repo_url", row.repo_url);
  put("version", row.version);
  put("environment_setup_commit", row.environment_setup_commit);
  put("created_at", row.created_at);
  put("hints_text", row.hints_text);
  if (notes.length > 0) out.intake_notes = notes.join("\n");
  return out;
}

const ensureNewline = (s: string) => (s.endsWith("\n") ? s : `${s}\n`);

/** Where to fetch the row's repository, and whether that needs network. */
function repoOf(
  row: SwebenchRow,
  datasetFile: string,
  mirror?: string,
): { url: string; network: "none" | "required" } | { field: string; reason: string } {
  const explicit = row.repo_url ?? undefined;
  const looksLikeName = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*\/[A-Za-z0-9_.-]+$/.test(row.repo);
  if (mirror !== undefined && looksLikeName && explicit == null) {
    return { url: resolve(mirror, row.repo), network: "none" };
  }
  const r = classifyRepo(
    looksLikeName ? row.repo : undefined,
    explicit ?? (looksLikeName ? undefined : row.repo),
  );
  if ("field" in r) return { field: explicit ? "repo_url" : "repo", reason: r.reason };
  if (r.kind === "local") {
    const path = isAbsolute(r.url) ? r.url : resolve(datasetFile, "..", r.url);
    return { url: path, network: "none" };
  }
  return { url: r.url, network: r.url.startsWith("file://") ? "none" : "required" };
}
