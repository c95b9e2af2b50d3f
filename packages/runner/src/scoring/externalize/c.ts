import type { z } from "zod";
import type { GuardFile } from "../decoys/guard.js";
import { type CTok, cStringBytes, cTokens } from "./c-tokens.js";
import type { Canon } from "./canon.js";
import {
  closing,
  eqEdit,
  OPEN,
  rewriteGraded,
  type SiteEdit,
  siteId,
  textSources,
  unlessAllConditional,
} from "./edits.js";
import { type Externalized, externalizedOf, type RewriteOutput } from "./rewrite.js";

/**
 * Externalizes the graded assertions of a check-h suite's hidden test files (issue 42; the
 * catalog's `tests/check.h` harness): in a graded top-level `void name(void) { … }`,
 * `CHECK_STR(got, "<literal>")` becomes an emission of `got`'s bytes (strcmp compares up to the
 * first NUL, and so does the host) and `CHECK(got == <positive integer literal>)` one of `got` as a
 * number; the literal leaves the file and stays on the host. A failed externalized check no longer
 * counts in the harness, so a decoy's extra failure count is gone with the decoy. The file is read
 * with a tokenizer of our own on the host (the trusted hidden files, never the workspace).
 * Whatever it cannot rewrite stays as written and is left to decoys, said per test.
 */

type Output = z.infer<typeof RewriteOutput>;

/** The emitter, put before a rewritten file (static and marked unused: `-Wall -Werror` builds). */
export const C_EMITTER = String.raw`#include <stdio.h>
#include <stdlib.h>
#include <string.h>
__attribute__((unused)) static void flakegym_line_(const char *site, const char *test, const char *value) {
    const char *path = getenv("FLAKEGYM_EMIT");
    if (!path || !*path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "{\"s\":\"%s\",\"n\":\"%s\",\"v\":%s}\n", site, test, value);
    fclose(f);
}
__attribute__((unused)) static void flakegym_emit_str_(const char *site, const char *test, const char *got) {
    if (!got) { flakegym_line_(site, test, "{\"t\":\"none\"}"); return; }
    size_t n = strlen(got);
    char *v = malloc(2 * n + 32);
    if (!v) return;
    strcpy(v, "{\"t\":\"bytes\",\"v\":\"");
    char *p = v + strlen(v);
    for (size_t i = 0; i < n; i++) p += sprintf(p, "%02x", (unsigned char)got[i]);
    strcpy(p, "\"}");
    flakegym_line_(site, test, v);
    free(v);
}
__attribute__((unused)) static void flakegym_emit_num_(const char *site, const char *test, long double got) {
    char v[96];
    if (got != got) snprintf(v, sizeof v, "{\"t\":\"float\",\"v\":\"nan\"}");
    else snprintf(v, sizeof v, "{\"t\":\"float\",\"v\":\"%.21Lg\"}", got);
    flakegym_line_(site, test, v);
}
`;

/** Top-level tokens of `[from, to)` that are `text` (outside any bracket). */
function topLevel(toks: readonly CTok[], from: number, to: number, texts: readonly string[]): number[] {
  const out: number[] = [];
  for (let j = from; j < to; j++) {
    if (toks[j]!.kind === "punct" && OPEN[toks[j]!.text]) j = closing(toks, j);
    else if (toks[j]!.kind === "punct" && texts.includes(toks[j]!.text)) out.push(j);
    if (j < 0) return [];
  }
  return out;
}

interface CTest {
  readonly name: string;
  readonly open: number;
  readonly close: number;
}

/** The file's top-level `[static] void name(void) { … }` functions. */
function cTests(toks: readonly CTok[]): CTest[] {
  const out: CTest[] = [];
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (t.kind === "punct" && t.text === "{") {
      const close = closing(toks, i);
      if (close < 0) return out;
      const [v, name, p, voidArg, q] = toks.slice(i - 5, i);
      if (
        v?.text === "void" &&
        name?.kind === "name" &&
        p?.text === "(" &&
        voidArg?.text === "void" &&
        q?.text === ")"
      )
        out.push({ name: name.text, open: i, close });
      i = close;
    } else if (t.kind === "punct" && (t.text === "(" || t.text === "[")) {
      const close = closing(toks, i);
      if (close < 0) return out;
      i = close;
    }
  }
  return out;
}

const POSITIVE_INT = /^(?:[1-9]\d*|0[xX][\da-fA-F]*[1-9a-fA-F][\da-fA-F]*)[uUlL]*$/;

/** The expected side of a check at `name` with arguments `[open, close]`, and where `got` is. */
function checkSite(
  toks: readonly CTok[],
  name: string,
  open: number,
  close: number,
): { got: [number, number]; want: Canon; call: string } | { why: string } {
  if (name === "CHECK_STR") {
    const comma = topLevel(toks, open + 1, close, [","]);
    const want = comma.length === 1 && comma[0]! + 2 === close ? toks[comma[0]! + 1]! : undefined;
    const bytes = want?.kind === "str" ? cStringBytes(want.text) : undefined;
    if (!bytes) return { why: "CHECK_STR whose expected side is not a plain string literal" };
    const nul = bytes.indexOf(0);
    const v = (nul < 0 ? bytes : bytes.subarray(0, nul)).toString("hex");
    return { got: [open + 1, comma[0]!], want: { t: "bytes", v }, call: "flakegym_emit_str_" };
  }
  const eq = topLevel(toks, open + 1, close, ["==", "!=", "&&", "||", "?", ","]);
  const want =
    eq.length === 1 && toks[eq[0]!]!.text === "==" && eq[0]! + 2 === close ? toks[eq[0]! + 1]! : undefined;
  if (want?.kind !== "num" || !POSITIVE_INT.test(want.text))
    return { why: "CHECK whose condition is not `got == <positive integer literal>`" };
  const v = BigInt(want.text.replace(/[uUlL]+$/, "")).toString();
  return { got: [open + 1, eq[0]!], want: { t: "int", v }, call: "flakegym_emit_num_" };
}

/** The checks of one graded test that leave the file, and why the others stayed. */
function testSites(
  src: string,
  toks: readonly CTok[],
  test: CTest,
  newId: () => string,
): { edits: SiteEdit[]; kept: string[] } {
  const edits: SiteEdit[] = [];
  const kept: string[] = [];
  const returns = toks.slice(test.open, test.close).some((t) => t.text === "return" || t.text === "goto");
  let depth = 0;
  for (let j = test.open; j < test.close; j++) {
    const t = toks[j]!;
    if (t.kind === "punct" && OPEN[t.text]) depth++;
    if (t.kind === "punct" && [")", "]", "}"].includes(t.text)) depth--;
    if ((t.text !== "CHECK" && t.text !== "CHECK_STR") || toks[j + 1]?.text !== "(") continue;
    const close = closing(toks, j + 1);
    if (close < 0) break;
    const s = checkSite(toks, t.text, j + 1, close);
    if ("why" in s) {
      kept.push(s.why);
      j = close;
      continue;
    }
    const id = newId();
    const got = src.slice(toks[s.got[0]]!.start, toks[s.got[1] - 1]!.end);
    const cast = s.call === "flakegym_emit_num_" ? "(long double)" : "";
    const once = !returns && depth === 1 && [";", "{", "}"].includes(toks[j - 1]?.text ?? "");
    const text = `${s.call}(${JSON.stringify(id)}, ${JSON.stringify(test.name)}, ${cast}(${got}))`;
    edits.push(eqEdit({ start: t.start, end: toks[close]!.end, text }, id, test.name, s.want, once));
    j = close;
  }
  return unlessAllConditional(edits, kept, "none of its checks runs unconditionally");
}

function rewriteFile(
  text: string,
  graded: ReadonlySet<string>,
  out: Output,
  newId: () => string,
): string | null {
  const toks = cTokens(text);
  if (!toks) return null;
  const body = rewriteGraded(text, cTests(toks), graded, out, (test) => testSites(text, toks, test, newId));
  return body === null ? null : `${C_EMITTER}${body}`;
}

/** The rewriter's answer for `files` (RewriteOutput's shape). Pure but for `newId`. */
export function rewriteCTests(
  files: readonly { path: string; text: string }[],
  graded: readonly string[],
  newId: () => string = siteId,
): Output {
  const out: Output = { files: [], sites: [], tests: {} };
  const names = new Set(graded);
  for (const f of files)
    out.files.push({
      path: f.path,
      text: f.path.endsWith(".c") ? rewriteFile(f.text, names, out, newId) : null,
    });
  return out;
}

/** Rewrites `files` (a check-h suite's) so the graded tests' literal expectations are emitted, not checked. */
export async function externalizeC(
  files: readonly GuardFile[],
  graded: readonly string[],
): Promise<Externalized> {
  const out = rewriteCTests(
    textSources(files, (p) => p.endsWith(".c")),
    graded,
  );
  return externalizedOf(files, JSON.stringify(out));
}
