import type { ResultFormat } from "../../tasks/task-spec.js";
import { type Lang, type Lexed, lex, matchClose, type Span } from "./scan.js";

/**
 * Where each test of a hidden test file is defined: the whole definition (to copy it), its name
 * (to rename it) and its body (where its assertions are). One recogniser per result format, for
 * the shapes tests are written in: top-level pytest functions and methods of top-level classes, `#[test]` functions, Go
 * `TestX(t *testing.T)`, top-level `test("…", …)` / `it("…", …)` calls, and check.h functions
 * registered with `T(name)`. Anything else is not found (and so reported unguarded). Pure.
 */

export interface TestBlock {
  /** The test's name as its runner reports it (the function name, or the test's title). */
  readonly name: string;
  /** pytest: the top-level class the test is a method of (ids `file::Class::name`); none for a function. */
  readonly scope?: string;
  /** The whole definition, decorators/attributes included, up to the end of its last line. */
  readonly whole: Span;
  /** What to replace to rename it (the identifier, or the title string's content). */
  readonly nameSpan: Span;
  readonly body: Span;
}

export const langOf = (format: ResultFormat): Lang =>
  format === "pytest"
    ? "python"
    : format === "libtest"
      ? "rust"
      : format === "gotest"
        ? "go"
        : format === "tap"
          ? "js"
          : "c";

const lineStart = (text: string, i: number) => text.lastIndexOf("\n", i - 1) + 1;
const lineEnd = (text: string, i: number) => {
  const j = text.indexOf("\n", i);
  return j < 0 ? text.length : j + 1;
};

/** Lines above `start` that belong to the definition (decorators, attributes), by `prefix`. */
function withLeading(text: string, start: number, prefix: RegExp): number {
  let s = start;
  while (s > 0) {
    const prev = lineStart(text, s - 1);
    if (!prefix.test(text.slice(prev, s))) break;
    s = prev;
  }
  return s;
}

function* matchesInCode(l: Lexed, re: RegExp): Generator<RegExpExecArray> {
  const g = new RegExp(re.source, re.flags.includes("g") ? re.flags : `${re.flags}g`);
  for (let m = g.exec(l.text); m; m = g.exec(l.text)) if (l.code[m.index]) yield m;
}

/**
 * Where the indented suite whose first line starts at `from` ends: the following lines that are
 * blank, indented deeper than `indent`, or inside a string. The end of its last such line.
 */
function suiteEnd(l: Lexed, from: number, indent: string): number {
  let end = from;
  let last = from;
  while (end < l.text.length) {
    const next = lineEnd(l.text, end);
    const line = l.text.slice(end, next);
    if (line.trim() === "") {
      end = next;
      continue;
    }
    const deeper = line.startsWith(indent) && /^[ \t]/.test(line.slice(indent.length));
    if (!deeper && l.code[end]) break;
    end = next;
    last = next;
  }
  return last;
}

/**
 * Where the decorators above a `def` at `indent` start: `@` lines at that indentation, with the
 * lines their arguments continue on (indented deeper, or closing a bracket) — a multi-line
 * `@pytest.mark.parametrize(…)` included. Lines above the topmost `@` line are not.
 */
function decoratorsStart(text: string, def: number, indent: string): number {
  let s = def;
  let confirmed = def;
  while (s > 0) {
    const prev = lineStart(text, s - 1);
    const line = text.slice(prev, s);
    if (!line.startsWith(indent) || line.trim() === "") break;
    const rest = line.slice(indent.length);
    if (rest.startsWith("@")) confirmed = prev;
    else if (!/^[ \t)\]}]/.test(rest)) break;
    s = prev;
  }
  return confirmed;
}

/** `def test…(` functions at exactly `indent` within `within`, of class `scope` (none: top level). */
function pythonDefs(l: Lexed, indent: string, within: Span, scope?: string): TestBlock[] {
  const out: TestBlock[] = [];
  const re = new RegExp(`^${indent}(?:async[ \\t]+)?def[ \\t]+(test\\w*)[ \\t]*\\(`, "m");
  for (const m of matchesInCode(l, re)) {
    if (m.index < within.start || m.index >= within.end) continue;
    const nameStart = m.index + m[0].indexOf(m[1]!);
    const last = suiteEnd(l, lineEnd(l.text, m.index), indent);
    const colon = l.text.indexOf(":", m.index + m[0].length);
    out.push({
      name: m[1]!,
      ...(scope === undefined ? {} : { scope }),
      whole: { start: decoratorsStart(l.text, m.index, indent), end: last },
      nameSpan: { start: nameStart, end: nameStart + m[1]!.length },
      body: { start: colon + 1, end: last },
    });
  }
  return out;
}

/** The first `:` in code after `from` outside brackets (a class header's end), or -1. */
function headerColon(l: Lexed, from: number): number {
  let depth = 0;
  for (let i = from; i < l.text.length; i++) {
    if (!l.code[i]) continue;
    const c = l.text[i]!;
    if ("([{".includes(c)) depth++;
    else if (")]}".includes(c)) depth--;
    else if (c === ":" && depth === 0) return i;
  }
  return -1;
}

/**
 * Test methods of top-level classes (`class TestX:`, `class T(unittest.TestCase):`): the `def
 * test…(` lines at the indentation of the class body's first statement. Nested classes are not read.
 */
function pythonMethods(l: Lexed): TestBlock[] {
  const out: TestBlock[] = [];
  for (const m of matchesInCode(l, /^class[ \t]+([A-Za-z_]\w*)/m)) {
    const colon = headerColon(l, m.index + m[0].length);
    if (colon < 0) continue;
    const bodyStart = lineEnd(l.text, colon);
    const end = suiteEnd(l, bodyStart, "");
    const first = /^([ \t]+)\S/m.exec(l.text.slice(bodyStart, end));
    if (!first) continue;
    out.push(...pythonDefs(l, first[1]!, { start: bodyStart, end }, m[1]!));
  }
  return out;
}

/** Top-level pytest test functions and test methods of top-level classes, in file order. */
function pythonBlocks(l: Lexed): TestBlock[] {
  return [...pythonDefs(l, "", { start: 0, end: l.text.length }), ...pythonMethods(l)].sort(
    (a, b) => a.whole.start - b.whole.start,
  );
}

/** Definitions of the form `<head matching re> … { body }` (brace-delimited bodies). */
function braceBlocks(l: Lexed, re: RegExp, leading: RegExp | undefined): TestBlock[] {
  const out: TestBlock[] = [];
  for (const m of matchesInCode(l, re)) {
    // the name is the identifier right before the parameter list
    const nameStart = m.index + m[0].search(new RegExp(`\\b${m[1]!}\\s*\\(`));
    let open = m.index + m[0].length;
    while (open < l.text.length && !(l.text[open] === "{" && l.code[open])) open++;
    const close = matchClose(l, open);
    if (close < 0) continue;
    out.push({
      name: m[1]!,
      whole: {
        start: leading ? withLeading(l.text, m.index, leading) : m.index,
        end: lineEnd(l.text, close),
      },
      nameSpan: { start: nameStart, end: nameStart + m[1]!.length },
      body: { start: open + 1, end: close },
    });
  }
  return out;
}

/** A `#[test]` attribute, then (after any other attributes) the function. */
const RUST_TEST = /^[ \t]*#\[test\][ \t]*\n(?:[ \t]*#\[[^\n]*\][ \t]*\n)*[ \t]*(?:pub\s+)?fn\s+(\w+)\s*\(/m;

function jsBlocks(l: Lexed): TestBlock[] {
  const out: TestBlock[] = [];
  for (const m of matchesInCode(l, /^(?:test|it)[ \t]*\([ \t]*/m)) {
    const open = l.text.indexOf("(", m.index);
    const title = l.strings.find((s) => s.start === m.index + m[0].length);
    const close = matchClose(l, open);
    if (!title || close < 0) continue;
    const raw = l.text.slice(title.start + 1, title.end - 1);
    if (raw.includes("\\") || raw.includes("${")) continue;
    const end = l.text[close + 1] === ";" ? close + 2 : close + 1;
    out.push({
      name: raw,
      whole: { start: m.index, end: lineEnd(l.text, end - 1) },
      nameSpan: { start: title.start + 1, end: title.end - 1 },
      body: { start: title.end, end: close },
    });
  }
  return out;
}

/** check.h: `static void name(void) { … }` functions that `TEST_MAIN(T(name), …)` registers. */
function cBlocks(l: Lexed): TestBlock[] {
  const registered = new Set(registrations(l).map((r) => r.name));
  return braceBlocks(l, /^static[ \t]+void[ \t]+(\w+)[ \t]*\([ \t]*void[ \t]*\)/m, undefined).filter((b) =>
    registered.has(b.name),
  );
}

/** Every `T(name)` inside `TEST_MAIN(…)`: the registrations a check.h test file runs. */
export function registrations(l: Lexed): { name: string; span: Span }[] {
  const out: { name: string; span: Span }[] = [];
  for (const m of matchesInCode(l, /\bTEST_MAIN[ \t]*\(/)) {
    const open = m.index + m[0].length - 1;
    const close = matchClose(l, open);
    if (close < 0) continue;
    const re = /\bT\(\s*(\w+)\s*\)/g;
    re.lastIndex = open;
    for (let t = re.exec(l.text); t && t.index < close; t = re.exec(l.text)) {
      if (l.code[t.index]) out.push({ name: t[1]!, span: { start: t.index, end: t.index + t[0].length } });
    }
  }
  return out;
}

/** The tests defined in `text`, in order, for a file of `format`. Pure. */
export function testBlocks(format: ResultFormat, text: string): { lexed: Lexed; blocks: TestBlock[] } {
  const l = lex(text, langOf(format));
  // django and sympy suites are not twinned: no blocks, so their graded tests are reported unguarded
  if (format === "django" || format === "sympy") return { lexed: l, blocks: [] };
  const blocks =
    format === "pytest"
      ? pythonBlocks(l)
      : format === "libtest"
        ? braceBlocks(l, RUST_TEST, undefined)
        : format === "gotest"
          ? braceBlocks(l, /^func[ \t]+(Test\w*)[ \t]*\([ \t]*\w+[ \t]+\*testing\.T[ \t]*\)/m, /^\/\//)
          : format === "tap"
            ? jsBlocks(l)
            : cBlocks(l);
  return { lexed: l, blocks };
}

/** A jest / vitest / mocha test: its full name (describe titles and its own, space-joined) and body. */
export interface NamedTest {
  readonly fullName: string;
  readonly body: Span;
}

const JS_SUITE = new Set(["describe", "context", "suite"]);

/**
 * Every `it` / `test` / `specify` call with a literal title in a jest, vitest or mocha file, named
 * as those runners name it for `--testNamePattern` / `--grep` (the enclosing `describe` / `context`
 * / `suite` titles, then its own, joined by spaces). A test inside any other call (`describe.each(…)(…)`,
 * a title that is not a plain literal) is left out: its full name is not known. Pure.
 */
export function jsNamedTests(l: Lexed): NamedTest[] {
  type Call = { at: number; open: number; name: string; title?: string; titleEnd: number; close: number };
  const calls = new Map<number, Call>();
  for (const m of matchesInCode(l, /\b(describe|context|suite|it|test|specify)(?:\.only)?[ \t]*\(/)) {
    if (l.text[m.index - 1] === ".") continue;
    const open = m.index + m[0].length - 1;
    const title = l.strings.find((s) => s.start > open && l.text.slice(open + 1, s.start).trim() === "");
    const raw = title && l.text.slice(title.start + 1, title.end - 1);
    const literal = raw !== undefined && !raw.includes("\\") && !raw.includes("${");
    calls.set(open, {
      at: m.index,
      open,
      name: m[1]!,
      ...(literal ? { title: raw } : {}),
      titleEnd: title?.end ?? open + 1,
      close: matchClose(l, open),
    });
  }
  const out: NamedTest[] = [];
  const parens: number[] = [];
  for (let i = 0; i < l.text.length; i++) {
    if (!l.code[i]) continue;
    const c = l.text[i];
    if (c === "(") {
      const call = calls.get(i);
      if (call && !JS_SUITE.has(call.name) && call.title !== undefined && call.close > 0) {
        const outer = parens.map((p) => calls.get(p));
        if (outer.every((o) => o !== undefined && JS_SUITE.has(o.name) && o.title !== undefined))
          out.push({
            fullName: [...outer.map((o) => o!.title!), call.title].join(" "),
            body: { start: call.titleEnd, end: call.close },
          });
      }
      parens.push(i);
    } else if (c === ")") parens.pop();
  }
  return out;
}
