import { randomBytes } from "node:crypto";
import type { z } from "zod";
import type { GuardFile } from "../decoys/guard.js";
import type { Canon, ExternalSite } from "./canon.js";
import type { RewriteOutput } from "./rewrite.js";

type Output = z.infer<typeof RewriteOutput>;

/** One assertion of a test file rewritten: the source span replaced by `text`, and the site it emits. */
export interface SiteEdit {
  readonly start: number;
  readonly end: number;
  readonly text: string;
  readonly site: ExternalSite;
}

/** A 16-hex-digit site id. */
export const siteId = (): string => randomBytes(8).toString("hex");

/** `text` with each edit's span replaced (spans never overlap). Pure. */
export function applyEdits(text: string, edits: readonly SiteEdit[]): string {
  let body = text;
  for (const e of [...edits].sort((a, b) => b.start - a.start))
    body = body.slice(0, e.start) + e.text + body.slice(e.end);
  return body;
}

/**
 * A test whose every site may run any number of times (even none) could emit nothing and pass: its
 * sites stay in the file, and the test is left to decoys with `why`. Pure.
 */
export function unlessAllConditional(
  edits: SiteEdit[],
  kept: string[],
  why: string,
): { edits: SiteEdit[]; kept: string[] } {
  if (edits.length && edits.every((e) => e.site.count === "any")) return { edits: [], kept: [...kept, why] };
  return { edits, kept };
}

/**
 * One file's graded tests rewritten (null: no site left the file); each graded test's coverage and
 * the emitted sites are added to `out`.
 */
export function rewriteGraded<T extends { readonly name: string }>(
  text: string,
  tests: readonly T[],
  graded: ReadonlySet<string>,
  out: Output,
  sitesOf: (test: T) => { edits: SiteEdit[]; kept: string[] },
): string | null {
  const edits: SiteEdit[] = [];
  for (const test of tests) {
    if (!graded.has(test.name)) continue;
    const s = sitesOf(test);
    out.tests[test.name] = { sites: s.edits.length, kept: s.kept };
    edits.push(...s.edits);
  }
  if (!edits.length) return null;
  out.sites.push(...edits.map((e) => e.site));
  return applyEdits(text, edits);
}

/**
 * The files whose path `wanted` accepts, as text: a file that is not clean UTF-8 would reach the
 * tokenizer changed, so it stays as written. Pure.
 */
export function textSources(
  files: readonly GuardFile[],
  wanted: (path: string) => boolean,
): { path: string; text: string }[] {
  return files
    .filter(
      (f) =>
        wanted(f.path) && !f.content.includes(0) && Buffer.from(f.content.toString("utf8")).equals(f.content),
    )
    .map((f) => ({ path: f.path, text: f.content.toString("utf8") }));
}

/** An equality site: the assertion's span becomes `text`, which emits the computed side under `id`. Pure. */
export function eqEdit(
  span: { readonly start: number; readonly end: number; readonly text: string },
  id: string,
  test: string,
  expected: Canon,
  once: boolean,
): SiteEdit {
  return {
    ...span,
    site: { site: id, test, kind: "eq", expected, opts: {}, count: once ? "one" : "any", pair: false },
  };
}

/** Brackets that open, and what closes each. */
export const OPEN: Readonly<Record<string, string>> = { "(": ")", "[": "]", "{": "}" };

/** The index of the bracket closing the one at `i` (-1: unbalanced or never closed). Pure. */
export function closing(
  toks: readonly { readonly kind: string; readonly text: string }[],
  i: number,
): number {
  const stack: string[] = [];
  for (let j = i; j < toks.length; j++) {
    const t = toks[j]!;
    if (t.kind !== "punct") continue;
    if (OPEN[t.text]) stack.push(OPEN[t.text]!);
    else if (t.text === ")" || t.text === "]" || t.text === "}") {
      if (stack.pop() !== t.text) return -1;
      if (!stack.length) return j;
    }
  }
  return -1;
}
