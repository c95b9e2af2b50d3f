/**
 * A C tokenizer for the host's check-h rewriter (externalize/c.ts): names, numbers, string and
 * char literals, preprocessor lines (one token each, continuations included), punctuators (`==`,
 * `!=`, `&&`, `||`, `<=`, `>=`, `->` whole); comments dropped. It never evaluates anything. A file
 * it cannot scan answers undefined, and its tests stay as written. Pure.
 */

export interface CTok {
  readonly kind: "name" | "num" | "str" | "char" | "pp" | "punct";
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const NAME = /[A-Za-z_]\w*/y;
const NUMBER = /(?:0[xX][\da-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?)[uUlLfF]*/y;
const TWO = ["==", "!=", "&&", "||", "<=", ">=", "->", "++", "--", "<<", ">>"];

function quotedEnd(src: string, i: number, q: string): number {
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === "\\") j++;
    else if (src[j] === q) return j + 1;
    else if (src[j] === "\n") return -1;
  }
  return -1;
}

/** The end of a preprocessor line at `i` (backslash continuations included). */
function ppEnd(src: string, i: number): number {
  let j = i;
  for (;;) {
    const nl = src.indexOf("\n", j);
    if (nl < 0) return src.length;
    if (src[nl - 1] !== "\\") return nl;
    j = nl + 1;
  }
}

/** Whether `i` starts a line (only blanks before it on its line). */
function lineStart(src: string, i: number): boolean {
  for (let j = i - 1; j >= 0 && src[j] !== "\n"; j--) if (src[j] !== " " && src[j] !== "\t") return false;
  return true;
}

function tokenAt(src: string, i: number): CTok | undefined {
  const c = src[i]!;
  const tok = (kind: CTok["kind"], end: number): CTok | undefined =>
    end < 0 ? undefined : { kind, text: src.slice(i, end), start: i, end };
  if (c === "#" && lineStart(src, i)) return tok("pp", ppEnd(src, i));
  if (c === '"') return tok("str", quotedEnd(src, i, '"'));
  if (c === "'") return tok("char", quotedEnd(src, i, "'"));
  NUMBER.lastIndex = i;
  const num = /[\d.]/.test(c) ? NUMBER.exec(src) : null;
  if (num) return tok("num", i + num[0].length);
  NAME.lastIndex = i;
  const name = NAME.exec(src);
  if (name) {
    // a prefixed literal (L"…", u8"…") is one token the rewriter never takes as plain
    if (/^(L|u|U|u8)$/.test(name[0]) && (src[i + name[0].length] === '"' || src[i + name[0].length] === "'"))
      return tok("str", quotedEnd(src, i + name[0].length, src[i + name[0].length]!));
    return tok("name", i + name[0].length);
  }
  if (TWO.includes(src.slice(i, i + 2))) return tok("punct", i + 2);
  return tok("punct", i + 1);
}

/** The tokens of a whole file, or undefined where it does not scan. Pure. */
export function cTokens(src: string): CTok[] | undefined {
  const toks: CTok[] = [];
  let i = 0;
  while (i < src.length) {
    if (/\s/.test(src[i]!)) {
      i++;
      continue;
    }
    if (src.startsWith("//", i)) {
      const nl = src.indexOf("\n", i);
      i = nl < 0 ? src.length : nl;
      continue;
    }
    if (src.startsWith("/*", i)) {
      const close = src.indexOf("*/", i + 2);
      if (close < 0) return undefined;
      i = close + 2;
      continue;
    }
    const t = tokenAt(src, i);
    if (!t) return undefined;
    toks.push(t);
    i = t.end;
  }
  return toks;
}

const SIMPLE: Record<string, number> = {
  n: 10,
  t: 9,
  r: 13,
  a: 7,
  b: 8,
  f: 12,
  v: 11,
  "\\": 92,
  '"': 34,
  "'": 39,
  "?": 63,
};

/**
 * The bytes of a plain C string literal's text (quotes included; the source's own bytes as UTF-8;
 * simple, octal and `\x` escapes), or undefined (a universal character name, a bad escape). Pure.
 */
export function cStringBytes(text: string): Buffer | undefined {
  if (!text.startsWith('"') || !text.endsWith('"') || text.length < 2) return undefined;
  const body = text.slice(1, -1);
  const out: number[] = [];
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== "\\") {
      out.push(...Buffer.from(c, "utf8"));
      continue;
    }
    const e = body[++i];
    if (e === undefined) return undefined;
    const oct = /^[0-7]{1,3}/.exec(body.slice(i));
    const hex = /^x([\da-fA-F]+)/.exec(body.slice(i));
    if (oct) {
      out.push(Number.parseInt(oct[0], 8) & 0xff);
      i += oct[0].length - 1;
    } else if (hex) {
      if (hex[1]!.length > 2) return undefined;
      out.push(Number.parseInt(hex[1]!, 16));
      i += hex[0].length - 1;
    } else if (SIMPLE[e] !== undefined) out.push(SIMPLE[e]!);
    else return undefined;
  }
  return Buffer.from(out);
}
