import type { Span } from "./scan.js";

/**
 * Where a decoy changes its test: the literal's `line:column`, the line counted from the test's
 * own `def`/name line (1) and the column from 1. It names the site, not the draw: every scoring
 * that changes that literal of that test has the same key, whatever value it draws and whatever
 * the test is renamed to, and it does not move when other tests of the file are added or
 * rewritten (the hidden test file is fixed per task). Pure.
 */
export function siteKey(text: string, nameStart: number, literal: Span): string {
  const defLine = text.lastIndexOf("\n", nameStart - 1) + 1;
  let line = 1;
  for (let i = defLine; i < literal.start; i++) if (text[i] === "\n") line++;
  const column = literal.start - (text.lastIndexOf("\n", literal.start - 1) + 1) + 1;
  return `${line}:${column}`;
}

/**
 * Sites recorded inert for a graded case (`tests.run.decoyInert`): gold, at validation, passed a
 * decoy that changed the literal there (the assertion does not run for that case, or the changed
 * value holds too), so a decoy there guards nothing and would only fail gold closed.
 */
export type InertSites = Readonly<Record<string, readonly string[]>>;

/** How many of `cases` have `key` recorded inert. Pure. */
export const inertCount = (inert: InertSites | undefined, cases: readonly string[], key: string): number =>
  cases.filter((c) => inert?.[c]?.includes(key)).length;
