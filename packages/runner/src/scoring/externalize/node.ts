import type { z } from "zod";
import type { GuardFile } from "../decoys/guard.js";
import { applyEdits, type SiteEdit, siteId, textSources } from "./edits.js";
import { jsPrelude } from "./js-emitter.js";
import { jsTokens } from "./js-tokens.js";
import { nodeSites } from "./node-sites.js";
import { assertBindings, moduleKind, testCalls } from "./node-tests.js";
import { type Externalized, externalizedOf, type RewriteOutput } from "./rewrite.js";

/**
 * Externalizes the graded assertions of a `node --test` suite's hidden test files (issue 42): in
 * a graded top-level `test(name, fn)`, node:assert's equalities and `throws` become emissions of
 * what the test computed (externalize/node-sites.ts); the literal expected values leave the file
 * and stay on the host as ExternalSites, compared there as node:assert's strict equalities
 * compare (externalize/compare.ts `same`). The rewriting reads the trusted hidden files on the
 * host with a tokenizer of our own (js-tokens.ts), never the workspace, and evaluates nothing but
 * literals. Whatever it cannot rewrite stays as written and is left to decoys, said per test.
 */

type Output = z.infer<typeof RewriteOutput>;

/** One file rewritten (null: unchanged), its sites and per-test coverage added to `out`. */
function rewriteFile(
  path: string,
  text: string,
  graded: ReadonlySet<string>,
  out: Output,
  newId: () => string,
): string | null {
  const toks = jsTokens(text);
  if (!toks) return null;
  const asserts = assertBindings(toks);
  const kind = moduleKind(path, toks);
  const edits: SiteEdit[] = [];
  for (const test of testCalls(toks)) {
    if (!graded.has(test.name)) continue;
    out.tests[test.name] ??= { sites: 0, kept: [] };
    const cov = out.tests[test.name]!;
    if (!kind) {
      cov.kept.push("its file is neither plainly an ES module nor CommonJS");
      continue;
    }
    if (!asserts.size) {
      cov.kept.push("its file binds no name to node:assert");
      continue;
    }
    const s = nodeSites(text, toks, test, asserts, newId);
    cov.sites += s.edits.length;
    cov.kept.push(...s.kept);
    edits.push(...s.edits);
  }
  if (!edits.length || !kind) return null;
  out.sites.push(...edits.map((e) => e.site));
  return `${jsPrelude(kind)}\n${applyEdits(text, edits)}`;
}

/** The rewriter's answer for `files` (RewriteOutput's shape, as the other rewriters print it). Pure but for `newId`. */
export function rewriteNodeTests(
  files: readonly { path: string; text: string }[],
  graded: readonly string[],
  newId: () => string = siteId,
): Output {
  const out: Output = { files: [], sites: [], tests: {} };
  // a name with `[` reads as parameters to the verdict (externalize/verdict.ts baseOf): left to decoys
  const names = new Set(graded.filter((g) => !g.includes("[")));
  for (const f of files)
    out.files.push({ path: f.path, text: rewriteFile(f.path, f.text, names, out, newId) });
  return out;
}

/** JavaScript test files (TypeScript ones need a loader whose output the rewriting cannot vouch for). */
const JS = /\.(m|c)?js$/;

/** Rewrites `files` (a node --test suite's) so the graded tests' literal expectations are emitted, not compared. */
export async function externalizeNode(
  files: readonly GuardFile[],
  graded: readonly string[],
): Promise<Externalized> {
  const out = rewriteNodeTests(
    textSources(files, (p) => JS.test(p)),
    graded,
  );
  return externalizedOf(files, JSON.stringify(out));
}
