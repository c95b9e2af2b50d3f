/**
 * How the graded tests of real SWE-bench rows are guarded (issue 42): each row's hidden test files
 * computed from its repository's mirror (base commit, test patch applied), run through the scorer's
 * own guard (scoring/decoys/guard-hidden.ts: externalized assertions first, decoys for the rest),
 * and counted per row. Usage: `npm run guard-coverage -- <rows.jsonl> <mirror root>` (mirrors laid
 * out as `--repo-mirror` reads them; `--list <file>` also writes every unguarded and
 * compared-outside test of each row, with its reason, as JSON). A row whose mirror or commit is absent is reported and skipped.
 */
import { realpathSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { execa } from "execa";
import { guardHidden } from "../packages/runner/src/scoring/decoys/guard-hidden.js";
import type { ExternalSite } from "../packages/runner/src/scoring/externalize/canon.js";
import { type GuardCoverage, guardCoverage } from "../packages/runner/src/scoring/externalize/coverage.js";
import { baseOf } from "../packages/runner/src/scoring/externalize/verdict.js";
import { hiddenTestsOf } from "../packages/runner/src/scoring/hidden-tests.js";
import { installedHiddenFiles } from "../packages/runner/src/scoring/read-only.js";
import { regularFile } from "../packages/runner/src/scoring/snapshot-files.js";
import { loadCatalog } from "../packages/runner/src/tasks/catalog.js";
import { mirrorCandidates } from "../packages/runner/src/tasks/repo-mirror.js";
import type { ResultFormat } from "../packages/runner/src/tasks/task-spec.js";
import { REPO_RUNNERS } from "../packages/runner/src/tasks/test-runners.js";
import { postImageByFile } from "../packages/runner/src/text/diff.js";

interface Row {
  readonly instance_id: string;
  readonly repo: string;
  readonly base_commit: string;
  readonly test_patch: string;
  readonly FAIL_TO_PASS: string[] | string;
  readonly PASS_TO_PASS: string[] | string;
  readonly language?: string;
  readonly problem_statement?: string;
}

/** Per result format: graded and guarded counts, summed. */
type Totals = Map<
  string,
  { graded: number; covered: number; externalized: number; truthOnly: number; comparedOutside: number }
>;

function add(t: Totals, format: string, c: GuardCoverage, truth = 0): void {
  const x = t.get(format) ?? { graded: 0, covered: 0, externalized: 0, truthOnly: 0, comparedOutside: 0 };
  t.set(format, {
    graded: x.graded + c.graded,
    covered: x.covered + c.externalized + c.decoyed,
    externalized: x.externalized + c.externalized,
    truthOnly: x.truthOnly + truth,
    comparedOutside: x.comparedOutside + c.comparedOutside,
  });
}

const pct = (covered: number, graded: number) => (graded ? ((100 * covered) / graded).toFixed(1) : "-");

function printTotals(t: Totals): void {
  let graded = 0;
  let covered = 0;
  let truth = 0;
  let input = 0;
  for (const [format, x] of [...t].sort()) {
    graded += x.graded;
    covered += x.covered;
    truth += x.truthOnly;
    input += x.comparedOutside;
    console.log(
      `  ${format}: ${x.covered} of ${x.graded} graded tests guarded (${pct(x.covered, x.graded)} %), ${x.externalized} externalized (${pct(x.externalized, x.graded)} %; ${x.truthOnly} by truth bits only)`,
    );
  }
  console.log(
    `total: ${covered} of ${graded} graded tests guarded (${pct(covered, graded)} %); without the ${truth} guarded by truth bits only: ${pct(covered - truth, graded)} %`,
  );
  // a pair's expected side is computed by the test (mostly from what it passes in, `assert
  // norm(v) == v`): no rewrite hides it, and a decoy (which changes literals) has none to change
  console.log(
    `expected side computed by the test (pairs, compared outside; mostly the test's own input): ${input} of ${graded} (${pct(input, graded)} %); guarded or pair-only: ${pct(covered + input, graded)} %`,
  );
}

/** Why graded tests stayed unguarded, over every row (the shapes left to handle), most first. */
const SHAPES = new Map<string, number>();

/** The part of an unguarded test's reason that names its assertions' shape. Pure. */
export const shapeOf = (reason: string): string => {
  const i = reason.indexOf("not externalized: ");
  return i < 0 ? reason : reason.slice(i + "not externalized: ".length);
};

function printShapes(): void {
  console.log("unguarded graded tests by shape (all rows):");
  for (const [shape, n] of [...SHAPES].sort((a, b) => b[1] - a[1]).slice(0, 12))
    console.log(`  ${n} × ${shape.slice(0, 200)}`);
}

function printRow(name: string, c: GuardCoverage, unguarded: readonly { reason: string }[], truth = 0): void {
  for (const u of unguarded) SHAPES.set(shapeOf(u.reason), (SHAPES.get(shapeOf(u.reason)) ?? 0) + 1);
  console.log(
    `${name}: ${c.externalized} externalized (${truth} by truth bits only) + ${c.decoyed} decoyed of ${c.graded} graded (${(100 * c.share).toFixed(1)} % guarded); ${c.comparedOutside} compared outside (expected computed by the test), ${c.unguarded} unguarded`,
  );
  const reasons = new Map<string, number>();
  for (const u of unguarded) reasons.set(u.reason, (reasons.get(u.reason) ?? 0) + 1);
  for (const [reason, n] of [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 4))
    console.log(`    ${n} × ${reason.slice(0, 220)}`);
}

/** The offline catalog tasks' coverage, per task (with its profile) and per language. */
async function catalog(): Promise<void> {
  const totals: Totals = new Map();
  for (const task of (await loadCatalog()).filter((t) => t.spec.network === "none")) {
    const hidden = await hiddenTestsOf(task, 1000);
    const repo = task.paths.sourceDir ?? `${task.dir}/repo`;
    const plain = hidden.suite ? await installedHiddenFiles(hidden, repo, undefined) : undefined;
    if (!hidden.suite || !plain) {
      console.log(`${task.spec.id}: skipped — not a suite task whose hidden files compute from ${repo}`);
      continue;
    }
    const g = await guardHidden(hidden.suite, plain, repo, undefined, undefined, true, task.spec.prompt);
    const c = guardCoverage(g.report);
    const truth = truthOnly(g.report.externalized ?? [], g.external);
    add(totals, `${task.spec.profile} (${hidden.suite.results})`, c, truth);
    printRow(`${task.spec.id} [${task.spec.profile}]`, c, g.report.unguarded, truth);
  }
  printTotals(totals);
  printShapes();
}

const ids = (v: string[] | string) => (Array.isArray(v) ? v : (JSON.parse(v) as string[]));

/**
 * The result format the row's tests report in, as intake picks its runner: SymPy's and Django's
 * own runners for their repositories (tasks/test-runners.ts REPO_RUNNERS), pytest for node ids,
 * else go test. Pure.
 */
export function rowFormat(row: Pick<Row, "repo" | "FAIL_TO_PASS">): ResultFormat {
  const own = REPO_RUNNERS[row.repo];
  if (own === "sympy" || own === "django") return own;
  return ids(row.FAIL_TO_PASS).some((i) => i.includes("::")) ? "pytest" : "gotest";
}

async function checkout(root: string, row: Row, dir: string): Promise<string> {
  const mirror = mirrorCandidates(root, row.repo).find((p) => {
    try {
      return realpathSync(p) !== "";
    } catch {
      return false;
    }
  });
  if (!mirror) throw new Error(`no mirror of ${row.repo} under ${root}`);
  const tree = join(dir, "tree");
  await execa("git", ["clone", "-q", "--shared", "--no-checkout", mirror, tree]);
  await execa("git", ["-C", tree, "checkout", "-q", row.base_commit]);
  await execa("git", ["-C", tree, "apply", "--whitespace=nowarn", "-"], { input: row.test_patch });
  return tree;
}

/**
 * Externalized tests whose every secret site is a truth (`assert x` / `assert not x`): what left
 * the file is one bit per assertion, not a value. Counted apart so the share says so. Pure.
 */
export function truthOnly(externalized: readonly string[], sites: readonly ExternalSite[]): number {
  return externalized.filter((id) => {
    const mine = sites.filter((s) => s.test === baseOf(id) && !s.pair);
    return mine.length > 0 && mine.every((s) => s.kind === "truth");
  }).length;
}

async function rowCoverage(root: string, row: Row) {
  const dir = await mkdtemp(join(tmpdir(), "flakegym-coverage-"));
  try {
    const tree = await checkout(root, row, dir);
    const installed = [];
    for (const f of postImageByFile(row.test_patch)) {
      const file = await regularFile(tree, f.path);
      if (file) installed.push({ path: f.path, ...file });
    }
    const suite = {
      results: rowFormat(row),
      failToPass: ids(row.FAIL_TO_PASS),
      passToPass: ids(row.PASS_TO_PASS),
    } as const;
    const g = await guardHidden(suite, installed, tree, undefined, undefined, true, row.problem_statement);
    return {
      format: suite.results,
      coverage: guardCoverage(g.report),
      truthOnly: truthOnly(g.report.externalized ?? [], g.external),
      unguarded: g.report.unguarded,
      comparedOutside: g.report.comparedOutside ?? [],
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Every unguarded and compared-outside graded test of the rows, per row (`--list <file>`). */
const LISTED: { row: string; unguarded: { id: string; reason: string }[]; comparedOutside: string[] }[] = [];

async function main(rowsPath: string, root: string, list?: string): Promise<void> {
  const rows = (await readFile(rowsPath, "utf8")).split("\n").filter((l) => l.trim() !== "");
  const totals: Totals = new Map();
  for (const [i, line] of rows.entries()) {
    let row: Row;
    try {
      row = JSON.parse(line) as Row;
    } catch {
      console.log(`line ${i + 1}: not JSON, skipped`);
      continue;
    }
    const r = await rowCoverage(root, row).catch((e: unknown) =>
      e instanceof Error ? e : new Error(String(e)),
    );
    if (r instanceof Error) {
      console.log(`${row.instance_id}: skipped — ${r.message}`);
      continue;
    }
    add(totals, r.format, r.coverage, r.truthOnly);
    printRow(row.instance_id, r.coverage, r.unguarded, r.truthOnly);
    LISTED.push({ row: row.instance_id, unguarded: r.unguarded, comparedOutside: r.comparedOutside });
  }
  printTotals(totals);
  printShapes();
  if (list) await writeFile(list, `${JSON.stringify(LISTED, null, 1)}\n`);
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [rows, root, flag, list] = process.argv.slice(2);
  if (rows === "--catalog") await catalog();
  else if (!rows || !root) {
    console.error(
      "usage: npm run guard-coverage -- <rows.jsonl> <mirror root> [--list <out.json>] | --catalog",
    );
    process.exit(2);
  } else await main(rows, root, flag === "--list" ? list : undefined);
}
