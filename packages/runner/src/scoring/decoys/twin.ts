import type { ResultFormat } from "../../tasks/task-spec.js";
import { assertionSites } from "./assertions.js";
import { langOf } from "./blocks.js";
import { type GuardFile, type GuardReport, mayTwin, writtenValues } from "./guard.js";
import { literalVariants, type Rand, shuffled } from "./perturb.js";
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

type Edit = { start: number; end: number; text: string };

/** One edit per assertion site of `text` that has a literal with another value (non-overlapping). */
function twinEdits(format: ResultFormat, text: string, rand: Rand): Edit[] {
  const l = lex(text, langOf(format));
  const written = writtenValues(l);
  const edits: Edit[] = [];
  // one side of a comparison only: `1 == 1` changed on both sides may hold again
  const compared: Span[] = [];
  const overlaps = (a: Span, b: Span) => a.start < b.end && b.start < a.end;
  for (const site of assertionSites(format, l, { start: 0, end: text.length })) {
    if (site.comparison && compared.some((c) => overlaps(c, site.comparison!))) continue;
    for (const lit of shuffled(site.literals, rand)) {
      if (!mayTwin(l, site, lit) || edits.some((e) => overlaps(e, lit))) continue;
      const [value] = literalVariants(text.slice(lit.start, lit.end), l.lang, site.kind, rand, 1, written);
      if (value === undefined) continue;
      edits.push({ ...lit, text: value });
      if (site.comparison) compared.push(site.comparison);
      break;
    }
  }
  return edits;
}

/** `text` with `edits` applied. Pure. */
function applyEdits(text: string, edits: readonly Edit[]): string {
  let out = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start))
    out = out.slice(0, e.start) + e.text + out.slice(e.end);
  return out;
}

/**
 * The twin of `files` (same paths, same order), how many assertion sites changed, and the guard
 * report of the task's one verdict: guarded when at least one site changed. Pure, given `rand`.
 */
export function twinFiles<F extends GuardFile>(
  files: readonly F[],
  rand: Rand,
): { files: F[]; sites: number; report: GuardReport } {
  let sites = 0;
  const out = files.map((f) => {
    const format = formatOfPath(f.path);
    if (!format || f.content.includes(0)) return f;
    const text = f.content.toString("utf8");
    const edits = twinEdits(format, text, rand);
    sites += edits.length;
    return edits.length ? { ...f, content: Buffer.from(applyEdits(text, edits)) } : f;
  });
  const tests = files.filter((f) => formatOfPath(f.path) !== undefined).map((f) => f.path);
  const report: GuardReport = sites
    ? { guarded: [EVAL_CMD_ID], unguarded: [] }
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
  return { files: out, sites, report };
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
