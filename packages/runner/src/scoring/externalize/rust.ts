import type { z } from "zod";
import type { GuardFile } from "../decoys/guard.js";
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
import { rustDebug } from "./rust-literal.js";
import { type RustTok, rustTokens } from "./rust-tokens.js";

/**
 * Externalizes the graded assertions of a libtest suite's hidden integration test files (issue
 * 42): in a graded top-level `#[test] fn name() { … }` of a file under a `tests/` directory,
 * `assert_eq!(got, <literal>[, message…])` becomes an emission of `got`'s `{:?}` text; the
 * literal leaves the file and its Debug text (externalize/rust-literal.ts) stays on the host, where
 * the two texts are compared. The file is read with a tokenizer of our own on the host (the
 * trusted hidden files, never the workspace). Whatever it cannot rewrite stays as written and is
 * left to decoys, said per test.
 */

type Output = z.infer<typeof RewriteOutput>;

/** The emitter, appended to a rewritten file (items may come in any order; inner attributes stay first). */
export const RUST_EMITTER = String.raw`
#[allow(dead_code)]
fn __fg_emit<T: ::std::fmt::Debug + ?Sized>(site: &str, test: &str, value: &T) {
    use ::std::io::Write as _;
    let debug = format!("{:?}", value);
    let mut json = String::with_capacity(debug.len() + 2);
    for c in debug.chars() {
        match c {
            '"' => json.push_str("\\\""),
            '\\' => json.push_str("\\\\"),
            c if (c as u32) < 0x20 => json.push_str(&format!("\\u{:04x}", c as u32)),
            c => json.push(c),
        }
    }
    if let Ok(path) = ::std::env::var("FLAKEGYM_EMIT") {
        if let Ok(mut f) = ::std::fs::OpenOptions::new().create(true).append(true).open(path) {
            let line = format!("{{\"s\":\"{}\",\"n\":\"{}\",\"v\":{{\"t\":\"str\",\"v\":\"{}\"}}}}\n", site, test, json);
            let _ = f.write_all(line.as_bytes());
        }
    }
}
`;

function args(toks: readonly RustTok[], open: number, close: number): [number, number][] {
  const out: [number, number][] = [];
  let from = open + 1;
  for (let j = open + 1; j < close; j++) {
    if (OPEN[toks[j]!.text] && toks[j]!.kind === "punct") j = closing(toks, j);
    else if (toks[j]!.text === "," && toks[j]!.kind === "punct") {
      out.push([from, j]);
      from = j + 1;
    }
    if (j < 0) return [];
  }
  if (from < close) out.push([from, close]);
  return out;
}

interface RustTest {
  readonly name: string;
  readonly open: number;
  readonly close: number;
}

/** The file's top-level `#[test] fn name() {…}` (no return type: no `?` in the body). */
function rustTests(toks: readonly RustTok[]): RustTest[] {
  const out: RustTest[] = [];
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (t.kind === "punct" && OPEN[t.text]) {
      const c = closing(toks, i);
      if (c < 0) return out;
      i = c;
      continue;
    }
    if (
      t.text !== "#" ||
      toks[i + 1]?.text !== "[" ||
      toks[i + 2]?.text !== "test" ||
      toks[i + 3]?.text !== "]"
    )
      continue;
    let j = i + 4;
    while (toks[j]?.text === "#" && toks[j + 1]?.text === "[") j = closing(toks, j + 1) + 1;
    if (
      toks[j]?.text !== "fn" ||
      toks[j + 1]?.kind !== "name" ||
      toks[j + 2]?.text !== "(" ||
      toks[j + 3]?.text !== ")"
    )
      continue;
    if (toks[j + 4]?.text !== "{") continue;
    const close = closing(toks, j + 4);
    if (close < 0) return out;
    out.push({ name: toks[j + 1]!.text, open: j + 4, close });
    i = close;
  }
  return out;
}

/** The `assert_eq!(got, <literal>)` sites of one graded test, and why the others stayed. */
function testSites(
  src: string,
  toks: readonly RustTok[],
  test: RustTest,
  newId: () => string,
): { edits: SiteEdit[]; kept: string[] } {
  const edits: SiteEdit[] = [];
  const kept: string[] = [];
  const returns = toks.slice(test.open, test.close).some((t) => t.text === "return" || t.text === "?");
  let depth = 0;
  for (let j = test.open; j < test.close; j++) {
    const t = toks[j]!;
    if (t.kind === "punct" && OPEN[t.text]) depth++;
    if (t.kind === "punct" && [")", "]", "}"].includes(t.text)) depth--;
    if (
      t.text !== "assert_eq" ||
      toks[j + 1]?.text !== "!" ||
      toks[j + 2]?.text !== "(" ||
      toks[j - 1]?.text === "::"
    )
      continue;
    const close = closing(toks, j + 2);
    if (close < 0) break;
    const a = args(toks, j + 2, close);
    const want = a.length >= 2 ? rustDebug(toks, a[1]![0], a[1]![1]) : undefined;
    if (want === undefined) {
      kept.push("assert_eq! whose expected side is not a literal");
      j = close;
      continue;
    }
    const id = newId();
    const got = src.slice(toks[a[0]![0]]!.start, toks[a[0]![1] - 1]!.end);
    const once = !returns && depth === 1 && [";", "{", "}"].includes(toks[j - 1]?.text ?? "");
    const text = `__fg_emit(${JSON.stringify(id)}, ${JSON.stringify(test.name)}, &(${got}))`;
    edits.push(
      eqEdit({ start: t.start, end: toks[close]!.end, text }, id, test.name, { t: "str", v: want }, once),
    );
    j = close;
  }
  return unlessAllConditional(edits, kept, "none of its assertions runs unconditionally");
}

/** One file rewritten (null: unchanged), its sites and per-test coverage added to `out`. */
function rewriteFile(
  text: string,
  graded: ReadonlySet<string>,
  out: Output,
  newId: () => string,
): string | null {
  const toks = rustTokens(text);
  if (!toks) return null;
  const body = rewriteGraded(text, rustTests(toks), graded, out, (test) =>
    testSites(text, toks, test, newId),
  );
  return body === null ? null : `${body}\n${RUST_EMITTER}`;
}

/** An integration test file: `tests/<name>.rs` of a crate (its tests' ids are their function names). */
const INTEGRATION = /(^|\/)tests\/[^/]+\.rs$/;

/** The rewriter's answer for `files` (RewriteOutput's shape). Pure but for `newId`. */
export function rewriteRustTests(
  files: readonly { path: string; text: string }[],
  graded: readonly string[],
  newId: () => string = siteId,
): Output {
  const out: Output = { files: [], sites: [], tests: {} };
  const names = new Set(graded);
  for (const f of files)
    out.files.push({
      path: f.path,
      text: INTEGRATION.test(f.path) ? rewriteFile(f.text, names, out, newId) : null,
    });
  return out;
}

/** Rewrites `files` (a libtest suite's) so the graded tests' literal expectations are emitted, not compared. */
export async function externalizeRust(
  files: readonly GuardFile[],
  graded: readonly string[],
): Promise<Externalized> {
  const out = rewriteRustTests(
    textSources(files, (p) => p.endsWith(".rs")),
    graded,
  );
  return externalizedOf(files, JSON.stringify(out));
}
