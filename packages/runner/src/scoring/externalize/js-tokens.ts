import { closing, OPEN } from "./edits.js";
/**
 * A JavaScript tokenizer for the host's node test rewriter (externalize/node.ts): enough of the
 * language to find calls, their arguments and block bodies in trusted hidden test files — names,
 * numbers, strings, template literals (with their `${…}` parts), regular expression literals,
 * punctuators; comments dropped. It never evaluates anything. A file it cannot scan (an
 * unterminated string, comment or template) answers undefined, and its tests stay as written. Pure.
 */

export interface Tok {
  readonly kind: "name" | "num" | "str" | "tmpl" | "regex" | "punct";
  /** The token's source text (a template's whole text, backticks included). */
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

/** Names after which a `/` starts a regular expression, not a division. */
const BEFORE_EXPRESSION = new Set([
  "return",
  "typeof",
  "case",
  "do",
  "else",
  "in",
  "of",
  "new",
  "delete",
  "void",
  "throw",
  "instanceof",
  "yield",
  "await",
]);

const NAME = /[A-Za-z_$][\w$]*/y;
const NUMBER = /(?:0[xXoObB][\da-fA-F_]+|(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][+-]?\d+)?)n?/y;

/** Where a `/` at `prev` starts a regular expression literal. */
function regexAllowed(prev: Tok | undefined): boolean {
  if (!prev) return true;
  if (prev.kind === "name") return BEFORE_EXPRESSION.has(prev.text);
  if (prev.kind === "punct") return ![")", "]", "}"].includes(prev.text);
  return false;
}

/** The end (exclusive) of the quoted string opening at `i`, or -1. */
function stringEnd(src: string, i: number): number {
  const q = src[i];
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === "\\") j++;
    else if (src[j] === q) return j + 1;
    else if (src[j] === "\n") return -1;
  }
  return -1;
}

/** The end of the regular expression literal opening at `i` (flags included), or -1. */
function regexEnd(src: string, i: number): number {
  let inClass = false;
  for (let j = i + 1; j < src.length; j++) {
    const c = src[j];
    if (c === "\\") j++;
    else if (c === "\n") return -1;
    else if (c === "[") inClass = true;
    else if (c === "]") inClass = false;
    else if (c === "/" && !inClass) {
      NAME.lastIndex = j + 1;
      const flags = NAME.exec(src);
      return j + 1 + (flags?.index === j + 1 ? flags[0].length : 0);
    }
  }
  return -1;
}

/** The end of the template literal opening at `i` (its `${…}` parts scanned as code), or -1. */
function templateEnd(src: string, i: number): number {
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === "\\") j++;
    else if (src[j] === "`") return j + 1;
    else if (src[j] === "$" && src[j + 1] === "{") {
      const inner = scan(src, j + 2, true);
      if (!inner) return -1;
      j = inner.end - 1;
    }
  }
  return -1;
}

/** The end of the comment at `i` (`//` or block), or -1 (none there), or -2 (unterminated). */
function commentEnd(src: string, i: number): number {
  if (src[i] !== "/") return -1;
  if (src[i + 1] === "/") {
    const nl = src.indexOf("\n", i);
    return nl < 0 ? src.length : nl;
  }
  if (src[i + 1] === "*") {
    const close = src.indexOf("*/", i + 2);
    return close < 0 ? -2 : close + 2;
  }
  return -1;
}

/** One token at `i` (not whitespace or a comment), or undefined where the source is malformed. */
function tokenAt(src: string, i: number, prev: Tok | undefined): Tok | undefined {
  const c = src[i]!;
  const tok = (kind: Tok["kind"], end: number): Tok | undefined =>
    end < 0 ? undefined : { kind, text: src.slice(i, end), start: i, end };
  if (c === '"' || c === "'") return tok("str", stringEnd(src, i));
  if (c === "`") return tok("tmpl", templateEnd(src, i));
  if (c === "/" && regexAllowed(prev)) return tok("regex", regexEnd(src, i));
  NUMBER.lastIndex = i;
  const num = /[\d.]/.test(c) ? NUMBER.exec(src) : null;
  if (num && num[0] !== ".") return tok("num", i + num[0].length);
  NAME.lastIndex = i;
  const name = NAME.exec(src);
  if (name) return tok("name", i + name[0].length);
  if (src.startsWith("=>", i)) return tok("punct", i + 2);
  if (src.startsWith("...", i)) return tok("punct", i + 3);
  return tok("punct", i + 1);
}

/** Tokens from `i`; `untilBrace`: stop after the `}` closing a template's `${` (depth 0). */
function scan(src: string, i: number, untilBrace: boolean): { toks: Tok[]; end: number } | undefined {
  const toks: Tok[] = [];
  let depth = 0;
  while (i < src.length) {
    if (/\s/.test(src[i]!)) {
      i++;
      continue;
    }
    const ce = commentEnd(src, i);
    if (ce === -2) return undefined;
    if (ce >= 0) {
      i = ce;
      continue;
    }
    const t = tokenAt(src, i, toks.at(-1));
    if (!t) return undefined;
    if (untilBrace && t.text === "}" && depth === 0) return { toks, end: t.end };
    if (t.text === "{") depth++;
    if (t.text === "}") depth--;
    toks.push(t);
    i = t.end;
  }
  return untilBrace ? undefined : { toks, end: i };
}

/** The tokens of a whole file, or undefined where it does not scan. Pure. */
export function jsTokens(src: string): Tok[] | undefined {
  return scan(src, 0, false)?.toks;
}

export { closing };

/** The top-level comma-separated argument ranges `[from, to)` between `open` and its closing `close`. Pure. */
export function argumentsOf(toks: readonly Tok[], open: number, close: number): [number, number][] {
  const out: [number, number][] = [];
  let from = open + 1;
  for (let j = open + 1; j < close; j++) {
    const t = toks[j]!;
    if (t.kind === "punct" && OPEN[t.text]) {
      j = closing(toks, j);
      if (j < 0) return [];
    } else if (t.kind === "punct" && t.text === ",") {
      out.push([from, j]);
      from = j + 1;
    }
  }
  if (from < close) out.push([from, close]);
  return out;
}
