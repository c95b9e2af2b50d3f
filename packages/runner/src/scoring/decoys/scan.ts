/**
 * A small lexer: where strings and comments are, so brackets, operators and literals are only ever
 * found in code. Five languages (Python, Rust, Go, JavaScript/TypeScript, C/C++). Used on hidden
 * test files (decoys) and on the agent's files for the judge's code reading (scoring/code-reading.ts),
 * so it is total on any input: Rust block comments nest, C++ raw strings (`R"d(…)d"`) and JS regex
 * literals are literals, an unterminated literal or comment runs to the end. Pure.
 */

export type Lang = "python" | "rust" | "go" | "js" | "c";

/** A half-open span of the source. */
export interface Span {
  readonly start: number;
  readonly end: number;
}

export interface Lexed {
  readonly text: string;
  readonly lang: Lang;
  /** 1 where the character is code (not inside a string literal or a comment). */
  readonly code: Uint8Array;
  /** Every string (and char) literal, quotes and prefixes included, in order. */
  readonly strings: readonly Span[];
}

const RUST_CHAR = /'(?:\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|.)|[^\\'\n])'/y;
const C_CHAR = /'(?:\\.|[^\\'\n])+'/y;

/** The end of a quoted literal starting at `i` (the quote), honouring backslash escapes. */
function quotedEnd(text: string, i: number, quote: string, escapes: boolean): number {
  let j = i + quote.length;
  while (j < text.length) {
    if (escapes && text[j] === "\\") {
      j += 2;
      continue;
    }
    if (text.startsWith(quote, j)) return j + quote.length;
    if (quote.length === 1 && quote !== "`" && text[j] === "\n") return j;
    j++;
  }
  return text.length;
}

/**
 * What a language of the C family beyond C itself adds (Java, C#, Kotlin, Swift, Scala, Dart):
 * `"""` / `'''` text blocks, C#'s `@"…"` verbatim strings (`""` inside), nesting block comments.
 */
export interface LexOptions {
  readonly tripleQuotes?: boolean;
  readonly verbatim?: boolean;
  readonly nestedComments?: boolean;
}

/** The end of a C# verbatim string at `i` (`@"`): a doubled quote stays inside. */
function verbatimEnd(text: string, i: number): number {
  let j = i + 2;
  while (j < text.length) {
    if (text[j] === '"') {
      if (text[j + 1] !== '"') return j + 1;
      j++;
    }
    j++;
  }
  return text.length;
}

/** Where a literal starting at `i` ends, or undefined when no literal starts there. */
function literalAt(text: string, i: number, lang: Lang, opts: LexOptions = {}): number | undefined {
  const c = text[i]!;
  const prev = i > 0 ? text[i - 1]! : "";
  if (opts.tripleQuotes && (text.startsWith('"""', i) || text.startsWith("'''", i)))
    return quotedEnd(text, i, text.slice(i, i + 3), true);
  if (opts.verbatim && c === "@" && text[i + 1] === '"') return verbatimEnd(text, i);
  if (lang === "python") {
    const m = /^([rRbBuUfF]{0,2})('''|"""|'|")/.exec(text.slice(i, i + 5));
    if (!m || /[A-Za-z0-9_]/.test(prev)) return undefined;
    // a backslash keeps the next character in the literal, raw strings included (r'\'' is one literal)
    return quotedEnd(text, i + m[1]!.length, m[2]!, true);
  }
  if (lang === "rust") {
    const raw = /^b?r(#*)"/.exec(text.slice(i, i + 12));
    if (raw && !/[A-Za-z0-9_]/.test(prev)) {
      const close = `"${raw[1]}`;
      const j = text.indexOf(close, i + raw[0].length);
      return j < 0 ? text.length : j + close.length;
    }
    if (c === "b" && text[i + 1] === '"' && !/[A-Za-z0-9_]/.test(prev))
      return quotedEnd(text, i + 1, '"', true);
    if (c === '"') return quotedEnd(text, i, '"', true);
    if (c === "'") {
      RUST_CHAR.lastIndex = i;
      return RUST_CHAR.test(text) ? RUST_CHAR.lastIndex : undefined;
    }
    return undefined;
  }
  if (lang === "c") {
    const raw = /^(?:u8|[uUL])?R"([^()\\\s"]{0,16})\(/.exec(text.slice(i, i + 24));
    if (raw && !/[A-Za-z0-9_]/.test(prev)) {
      const close = `)${raw[1]}"`;
      const j = text.indexOf(close, i + raw[0].length);
      return j < 0 ? text.length : j + close.length;
    }
  }
  if (lang === "js" && c === "/" && regexMayStart(text, i)) return regexEnd(text, i);
  if (c === '"') return quotedEnd(text, i, '"', true);
  if (c === "`" && (lang === "go" || lang === "js")) return quotedEnd(text, i, "`", lang === "js");
  if (c === "'") {
    if (lang === "js") return quotedEnd(text, i, "'", true);
    C_CHAR.lastIndex = i;
    return C_CHAR.test(text) ? C_CHAR.lastIndex : undefined;
  }
  return undefined;
}

/** Whether a `/` at `i` (not `//` or `/*`) starts a JS regex literal: what precedes it cannot end an operand. */
function regexMayStart(text: string, i: number): boolean {
  if (text[i + 1] === "/" || text[i + 1] === "*") return false;
  let j = i - 1;
  while (j >= 0 && /\s/.test(text[j]!)) j--;
  if (j < 0) return true;
  if (/[(,=:[!&|?{};~+\-*%<>^]/.test(text[j]!)) return true;
  const word = /[A-Za-z_$][\w$]*$/.exec(text.slice(Math.max(0, j - 15), j + 1))?.[0];
  return (
    word !== undefined &&
    /^(?:return|typeof|instanceof|in|of|new|delete|void|throw|case|do|else|yield|await)$/.test(word)
  );
}

/** The end of the JS regex literal at `i`: escapes and `[…]` classes honoured, flags included, never past the line. */
function regexEnd(text: string, i: number): number {
  let j = i + 1;
  let inClass = false;
  while (j < text.length && text[j] !== "\n") {
    const ch = text[j]!;
    if (ch === "\\") j++;
    else if (ch === "[") inClass = true;
    else if (ch === "]") inClass = false;
    else if (ch === "/" && !inClass) {
      j++;
      while (j < text.length && /[a-z]/.test(text[j]!)) j++;
      return j;
    }
    j++;
  }
  return j;
}

/** The end of the block comment at `i`; Rust's nest (an inner opener needs its own closer). */
function blockCommentEnd(text: string, i: number, nests: boolean): number {
  let depth = 0;
  let j = i;
  while (j < text.length) {
    if (text.startsWith("/*", j)) {
      depth = nests ? depth + 1 : 1;
      j += 2;
    } else if (text.startsWith("*/", j)) {
      j += 2;
      if (--depth === 0) return j;
    } else j++;
  }
  return text.length;
}

/** Lexes `text` as `lang` (`opts`: a C-family language beyond C, lexed as `c`). Pure. */
export function lex(text: string, lang: Lang, opts: LexOptions = {}): Lexed {
  const code = new Uint8Array(text.length).fill(1);
  const strings: Span[] = [];
  const lineComment = lang === "python" ? "#" : "//";
  let i = 0;
  while (i < text.length) {
    if (text.startsWith(lineComment, i)) {
      const j = text.indexOf("\n", i);
      const end = j < 0 ? text.length : j;
      code.fill(0, i, end);
      i = end;
      continue;
    }
    if (lang !== "python" && text.startsWith("/*", i)) {
      const end = blockCommentEnd(text, i, lang === "rust" || opts.nestedComments === true);
      code.fill(0, i, end);
      i = end;
      continue;
    }
    const end = literalAt(text, i, lang, opts);
    if (end !== undefined) {
      code.fill(0, i, end);
      // a regex literal is not code, nor a string a decoy may change
      if (text[i] !== "/") strings.push({ start: i, end });
      i = end;
      continue;
    }
    i++;
  }
  return { text, lang, code, strings };
}

const OPEN: Record<string, string> = { "(": ")", "[": "]", "{": "}" };

/** The index of the bracket closing the one at `open` (code only), or -1. Pure. */
export function matchClose(l: Lexed, open: number): number {
  const stack: string[] = [];
  for (let i = open; i < l.text.length; i++) {
    if (!l.code[i]) continue;
    const c = l.text[i]!;
    if (OPEN[c]) stack.push(OPEN[c]!);
    else if (c === ")" || c === "]" || c === "}") {
      if (stack.pop() !== c) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}

/**
 * Splits `[start, end)` at every top-level (bracket depth 0, code) occurrence of `sep`; the parts
 * are trimmed spans. Pure.
 */
export function splitTop(l: Lexed, start: number, end: number, sep: string): Span[] {
  const parts: Span[] = [];
  let depth = 0;
  let from = start;
  for (let i = start; i < end; i++) {
    if (!l.code[i]) continue;
    const c = l.text[i]!;
    if (OPEN[c]) depth++;
    else if (c === ")" || c === "]" || c === "}") depth--;
    else if (depth === 0 && l.text.startsWith(sep, i) && isWholeOperator(l.text, i, sep)) {
      parts.push(trimSpan(l.text, from, i));
      from = i + sep.length;
      i += sep.length - 1;
    }
  }
  parts.push(trimSpan(l.text, from, end));
  return parts;
}

/** `==` must not be part of `===`, `!==`, `<=`, `>=`; `!=` not of `!==`; `,`/`;`/`||` as they are. */
function isWholeOperator(text: string, i: number, sep: string): boolean {
  if (sep === "==") return !"=!<>".includes(text[i - 1] ?? "") && text[i + 2] !== "=";
  if (sep === "!=") return text[i + 2] !== "=";
  if (sep === " in ") return true;
  return true;
}

export function trimSpan(text: string, start: number, end: number): Span {
  let s = start;
  let e = end;
  while (s < e && /\s/.test(text[s]!)) s++;
  while (e > s && /\s/.test(text[e - 1]!)) e--;
  return { start: s, end: e };
}

/** The string literals inside `[start, end)`. Pure. */
export const stringsIn = (l: Lexed, start: number, end: number): Span[] =>
  l.strings.filter((s) => s.start >= start && s.end <= end);

const NUMBER = /(?<![\w.$])\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?([a-z][a-z0-9]*)?(?![\w.])/g;

/** Decimal number literals in code inside `[start, end)` (a Rust suffix such as `u16` included). Pure. */
export function numbersIn(l: Lexed, start: number, end: number): Span[] {
  const out: Span[] = [];
  NUMBER.lastIndex = 0;
  const slice = l.text.slice(start, end);
  for (let m = NUMBER.exec(slice); m; m = NUMBER.exec(slice)) {
    const s = start + m.index;
    if (!l.code[s]) continue;
    if (/^0[xob]/i.test(m[0])) continue;
    out.push({ start: s, end: s + m[0].length });
  }
  return out;
}

/** Boolean literals in code inside `[start, end)` (`true`/`false`; Python's `True`/`False`). Pure. */
export function boolsIn(l: Lexed, start: number, end: number): Span[] {
  const re = l.lang === "python" ? /\b(True|False)\b/g : /\b(true|false)\b/g;
  const out: Span[] = [];
  const slice = l.text.slice(start, end);
  for (let m = re.exec(slice); m; m = re.exec(slice)) {
    const s = start + m.index;
    if (l.code[s]) out.push({ start: s, end: s + m[0].length });
  }
  return out;
}
