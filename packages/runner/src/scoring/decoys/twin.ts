import type { ResultFormat } from "../../tasks/task-spec.js";
import { postImageByFile } from "../../text/diff.js";
import { assertionSites } from "./assertions.js";
import { jsNamedTests, langOf, testBlocks } from "./blocks.js";
import { type ContextIndex, contextDistance, contextIndex } from "./context.js";
import { type GuardFile, type GuardReport, mayTwin, writtenValues } from "./guard.js";
import { definedName } from "./guard-hidden.js";
import { isComplement, literalVariants, type Rand, shuffled } from "./perturb.js";
import { lex, type Span } from "./scan.js";

/**
 * The decoy twin of an `eval_cmd` task's hidden test files: the same files with every assertion
 * site the decoy code can perturb given another expected value (one literal per site, a value of
 * the same type and look). Scoring runs the task's eval command a second time, in a fresh sandbox,
 * on these files; that run must fail. A verdict forged by the code under test (an exit status, a
 * rewritten reward file, a patched runner, an always-equal value) does not depend on the tests'
 * expectations, so it passes the twin too and is not believed. Names, paths and order stay as
 * they are (an eval command may select tests by name); sizes change only as much as the values
 * do. Pure, given `rand`.
 */

/** The graded id an eval_cmd task's one verdict is reported under (guarded or not). */
export const EVAL_CMD_ID = "eval_cmd";

/** The decoy code's reader of each source language, by file extension. */
const FORMAT_OF_EXTENSION: Readonly<Record<string, ResultFormat>> = {
  py: "pytest",
  rs: "libtest",
  go: "gotest",
  js: "tap",
  mjs: "tap",
  cjs: "tap",
  ts: "tap",
  mts: "tap",
  cts: "tap",
  c: "check-h",
  h: "check-h",
};

/**
 * Which of the decoy code's readers a hidden file is read with, by its extension; undefined for
 * other files (test.sh, data). Every hidden file of an eval_cmd task is test material (an exported
 * task carries its tests under `.harbor/tests/files/`, helpers and `src/` test modules included),
 * so the path's shape is not asked: an assertion changed anywhere only makes the twin fail. Pure.
 */
export function formatOfPath(path: string): ResultFormat | undefined {
  const base = path.slice(path.lastIndexOf("/") + 1);
  const dot = base.lastIndexOf(".");
  return dot > 0 ? FORMAT_OF_EXTENSION[base.slice(dot + 1)] : undefined;
}

/** One changed literal; `complement`: a boolean flipped (perturb.ts isComplement). */
type Edit = { start: number; end: number; text: string; complement: boolean };

/**
 * One edit per assertion site of `text` that has a literal with another value (non-overlapping),
 * a literal whose changed value is not a complement first: a flipped boolean is passed by an
 * honest wrong answer, so a site changed that way says nothing when its real copy failed.
 */
function twinEdits(
  format: ResultFormat,
  text: string,
  rand: Rand,
  context: { readonly index: ContextIndex; readonly offset: number },
): Edit[] {
  const l = lex(text, langOf(format));
  const written = writtenValues(l);
  const edits: Edit[] = [];
  // one side of a comparison only: `1 == 1` changed on both sides may hold again
  const compared: Span[] = [];
  const overlaps = (a: Span, b: Span) => a.start < b.end && b.start < a.end;
  for (const site of assertionSites(format, l, { start: 0, end: text.length })) {
    if (site.comparison && compared.some((c) => overlaps(c, site.comparison!))) continue;
    let fallback: Edit | undefined;
    let chosen: Edit | undefined;
    for (const lit of shuffled(site.literals, rand)) {
      if (!mayTwin(l, site, lit) || edits.some((e) => overlaps(e, lit))) continue;
      const original = text.slice(lit.start, lit.end);
      // a changed value the rest of the files write as often as the real one (decoys/context.ts)
      const own = { start: context.offset + lit.start, end: context.offset + lit.end };
      const cost = contextDistance(original, context.index, own);
      const [value] = literalVariants(original, l.lang, site.kind, rand, 1, written, cost);
      if (value === undefined) continue;
      const edit = { start: lit.start, end: lit.end, text: value, complement: isComplement(original, value) };
      if (!edit.complement) {
        chosen = edit;
        break;
      }
      fallback ??= edit;
    }
    const edit = chosen ?? fallback;
    if (!edit) continue;
    edits.push(edit);
    if (site.comparison) compared.push(site.comparison);
  }
  return edits;
}

/** Every file's twin, its values chosen against what all the hidden files write (decoys/context.ts). */
function twinAll<F extends GuardFile>(files: readonly F[], rand: Rand): { file: F; edits: Edit[] }[] {
  const index = contextIndex(files.map((f) => (f.content.includes(0) ? "" : f.content.toString("utf8"))));
  return files.map((f, i) => twinFile(f, rand, { index, offset: index.offsets[i]! }));
}

/** `text` with `edits` applied. Pure. */
function applyEdits(text: string, edits: readonly Edit[]): string {
  let out = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start))
    out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/** One file's twin: every assertion site with a literal changed, and the changed spans (original offsets). */
function twinFile<F extends GuardFile>(
  f: F,
  rand: Rand,
  context: { readonly index: ContextIndex; readonly offset: number },
): { file: F; edits: Edit[] } {
  const format = formatOfPath(f.path);
  if (!format || f.content.includes(0)) return { file: f, edits: [] };
  const text = f.content.toString("utf8");
  const edits = twinEdits(format, text, rand, context);
  return { file: edits.length ? { ...f, content: Buffer.from(applyEdits(text, edits)) } : f, edits };
}

/** The hidden files the decoy code reads (by extension), for reasons. Pure. */
const sourcePaths = (files: readonly GuardFile[]) =>
  files.filter((f) => formatOfPath(f.path) !== undefined).map((f) => f.path);

/**
 * The twin of `files` (same paths, same order), how many assertion sites changed, and the guard
 * report of the task's one verdict: guarded when at least one site changed. Pure, given `rand`.
 */
export function twinFiles<F extends GuardFile>(
  files: readonly F[],
  rand: Rand,
): { files: F[]; sites: number; report: GuardReport } {
  const twins = twinAll(files, rand);
  const sites = twins.reduce((n, t) => n + t.edits.length, 0);
  const tests = sourcePaths(files);
  const allComplements = twins.every((t) => t.edits.every((e) => e.complement));
  const report: GuardReport = sites
    ? { guarded: [EVAL_CMD_ID], unguarded: [], ...(allComplements ? { complementOnly: [EVAL_CMD_ID] } : {}) }
    : {
        guarded: [],
        unguarded: [
          {
            id: EVAL_CMD_ID,
            reason: tests.length
              ? `no assertion in the hidden test files (${tests.join(", ")}) has a literal expected value decoys can change`
              : "no hidden file is source the decoy code reads (Python, Rust, Go, JavaScript/TypeScript, C): nothing to change",
          },
        ],
      };
  return { files: twins.map((t) => t.file), sites, report };
}

/** A test of a hidden file: its name, whether the twin changed one of its assertions, how ids name it. */
interface TwinnedTest {
  readonly name: string;
  /** pytest: the class the test is a method of (its ids end `::Class::name`). */
  readonly scope?: string;
  readonly changed: boolean;
  /** Every changed assertion of the test is a flipped boolean (an honest wrong answer passes it). */
  readonly complementOnly: boolean;
  /** jest / vitest / mocha: a graded id is a regular expression over the test's full name. */
  readonly byPattern: boolean;
}

/**
 * The tests of one hidden file and whether the twin changed an assertion in each: jest / vitest /
 * mocha tests by full name (JavaScript/TypeScript), other languages' test functions by name. Pure.
 */
function twinnedTests(f: GuardFile, edits: readonly Edit[]): TwinnedTest[] {
  const format = formatOfPath(f.path);
  if (!format || f.content.includes(0)) return [];
  const text = f.content.toString("utf8");
  const tests =
    format === "tap"
      ? jsNamedTests(lex(text, "js")).map((t) => ({ name: t.fullName, scope: undefined, body: t.body }))
      : testBlocks(format, text).blocks.map((b) => ({ name: b.name, scope: b.scope, body: b.body }));
  return tests.map((t) => {
    const mine = edits.filter((e) => e.start >= t.body.start && e.end <= t.body.end);
    return {
      name: t.name,
      ...(t.scope === undefined ? {} : { scope: t.scope }),
      changed: mine.length > 0,
      complementOnly: mine.length > 0 && mine.every((e) => e.complement),
      byPattern: format === "tap",
    };
  });
}

/** Whether `id` compiles as a regular expression. Pure. */
function isPattern(id: string): boolean {
  try {
    new RegExp(id);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether the command of graded id `id` runs `test`: jest's `--testNamePattern` and vitest's and
 * mocha's `--grep` take the id (escaped at intake, test-runners.ts) as a regular expression over
 * the full name; other runners name a test by its last part (`path::name`, `TestName/sub`). Pure.
 */
function idRuns(id: string, test: TwinnedTest): boolean {
  if (test.scope !== undefined) return id.split("[")[0]!.endsWith(`::${test.scope}::${test.name}`);
  if (!test.byPattern) return definedName("gotest", definedName("pytest", id)) === test.name;
  return isPattern(id) && new RegExp(id).test(test.name);
}

/**
 * The twin of a per-id task's hidden files (kind `ids`: one command per graded id): every
 * changeable assertion site changed, as for an eval_cmd task, and a guard report per graded id —
 * guarded when its command runs a test (in a hidden file) whose body had an assertion changed, so a
 * correct solution fails that id in the twin. No id guarded: no twin (`sites` 0). Pure, given `rand`.
 */
export function idsTwinFiles<F extends GuardFile>(
  files: readonly F[],
  ids: readonly string[],
  rand: Rand,
): { files: F[]; sites: number; report: GuardReport } {
  const twins = twinAll(files, rand);
  const tests = files.flatMap((f, i) => twinnedTests(f, twins[i]!.edits));
  const report: GuardReport & { complementOnly: string[] } = {
    guarded: [],
    unguarded: [],
    complementOnly: [],
  };
  for (const id of ids) {
    const run = tests.filter((t) => idRuns(id, t));
    if (run.some((t) => t.changed)) {
      report.guarded.push(id);
      if (run.filter((t) => t.changed).every((t) => t.complementOnly)) report.complementOnly.push(id);
    } else
      report.unguarded.push({
        id,
        reason: run.length
          ? 'its test has no assertion with a literal expected value decoys can change (`expect(f()).toBe(3)`, `assert.equal(f(), "x")`)'
          : !isPattern(id)
            ? "is not a regular expression, which jest's --testNamePattern and vitest's and mocha's filters take: fix the row's id"
            : `no test in the hidden test files (${sourcePaths(files).join(", ") || "none is JavaScript/TypeScript or other source"}) is named like it`,
      });
  }
  const { complementOnly, ...rest } = report;
  if (!report.guarded.length) return { files: [...files], sites: 0, report: rest };
  if (complementOnly.length) Object.assign(rest, { complementOnly });
  return {
    files: twins.map((t) => t.file),
    sites: twins.reduce((n, t) => n + t.edits.length, 0),
    report: rest,
  };
}

/**
 * The note `tasks check` prints for an eval_cmd task whose hidden files give its twin nothing to
 * change (`hidden`: path → content, relative to the workspace), or undefined when it is guarded. Pure.
 */
export function unguardedEvalCmdNote(hidden: Readonly<Record<string, string | Buffer>>): string | undefined {
  const files = Object.entries(hidden).map(([path, c]) => ({ path, content: Buffer.from(c) }));
  const r = twinFiles(files, () => 0).report.unguarded[0];
  return r
    ? `its eval_cmd verdict has no decoy twin (${r.reason}): a forged exit status would go unseen; validate fails it unless --allow-unguarded`
    : undefined;
}

/**
 * The note `tasks check` prints for a per-id task (kind `ids`) whose tests patch shows graded ids no
 * twin can guard, or undefined when every id is seen guarded. The patch shows new files whole and
 * only its hunks of the files it changes; scoring reads those whole (score.json `decoys` is the
 * verdict), so an id whose test lies outside the hunks is said to be unseen, not unguarded. Pure.
 */
export function unguardedIdsNote(testsPatch: string, ids: readonly string[]): string | undefined {
  const shown = postImageByFile(testsPatch);
  const files = shown.map((f) => ({ path: f.path, content: Buffer.from(f.text) }));
  const { unguarded } = idsTwinFiles(files, ids, () => 0).report;
  if (!unguarded.length) return undefined;
  const partial = shown.some((f) => !f.whole);
  return `${unguarded.length} of ${ids.length} graded id(s) ${partial ? "not seen guarded in the tests patch's lines" : "without a decoy twin"}: ${unguarded
    .map((u) => `${u.id} (${u.reason})`)
    .join(
      "; ",
    )} — a forged pass of an unguarded id would go unseen; validate fails it unless --allow-unguarded${partial ? " (scoring reads the files the patch changes whole: score.json decoys says which ids it guarded)" : ""}`;
}
