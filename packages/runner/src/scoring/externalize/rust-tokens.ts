/**
 * A Rust tokenizer for the host's libtest rewriter (externalize/rust.ts): names, numbers, string
 * and char literals (raw and byte ones kept whole, so nothing inside them reads as code),
 * lifetimes, punctuators; comments (nested block ones too) dropped. It never evaluates anything.
 * A file it cannot scan answers undefined, and its tests stay as written. Pure.
 */

export interface RustTok {
  readonly kind: "name" | "num" | "str" | "rawstr" | "char" | "lifetime" | "punct";
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const NAME = /[A-Za-z_][\w]*/y;
const NUMBER =
  /(?:0[xob][\da-fA-F_]+|\d[\d_]*(?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)(?:[iuf](?:8|16|32|64|128|size))?/y;
const RAW = /b?r(#*)"/y;

/** The end of the quoted literal opening at `i` (its quote char), or -1. */
function quotedEnd(src: string, i: number, q: string): number {
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === "\\") j++;
    else if (src[j] === q) return j + 1;
  }
  return -1;
}

/** The end of a block comment at `i` (they nest), or -1. */
function blockEnd(src: string, i: number): number {
  let depth = 0;
  for (let j = i; j < src.length - 1; j++) {
    if (src[j] === "/" && src[j + 1] === "*") {
      depth++;
      j++;
    } else if (src[j] === "*" && src[j + 1] === "/") {
      depth--;
      j++;
      if (depth === 0) return j + 1;
    }
  }
  return -1;
}

/** A `'` at `i`: a char literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`). */
function quoteTok(src: string, i: number): RustTok | undefined {
  const m = /'(?:\\(?:u\{[\da-fA-F]{1,6}\}|x[\da-fA-F]{2}|.)|[^\\'\n])'/uy;
  m.lastIndex = i;
  const c = m.exec(src);
  if (c) return { kind: "char", text: c[0], start: i, end: i + c[0].length };
  NAME.lastIndex = i + 1;
  const n = NAME.exec(src);
  return n ? { kind: "lifetime", text: `'${n[0]}`, start: i, end: i + 1 + n[0].length } : undefined;
}

/** One token at `i`, or undefined where the source is malformed. */
function tokenAt(src: string, i: number): RustTok | undefined {
  const c = src[i]!;
  const tok = (kind: RustTok["kind"], end: number): RustTok | undefined =>
    end < 0 ? undefined : { kind, text: src.slice(i, end), start: i, end };
  RAW.lastIndex = i;
  const raw = RAW.exec(src);
  if (raw) {
    const close = src.indexOf(`"${raw[1]}`, i + raw[0].length);
    return tok("rawstr", close < 0 ? -1 : close + 1 + raw[1]!.length);
  }
  if (c === '"') return tok("str", quotedEnd(src, i, '"'));
  if (c === "b" && src[i + 1] === '"') return tok("rawstr", quotedEnd(src, i + 1, '"'));
  if (c === "b" && src[i + 1] === "'") return tok("rawstr", quotedEnd(src, i + 1, "'"));
  if (c === "'") return quoteTok(src, i);
  NUMBER.lastIndex = i;
  const num = /\d/.test(c) ? NUMBER.exec(src) : null;
  if (num) return tok("num", i + num[0].length);
  NAME.lastIndex = i;
  const name = NAME.exec(src);
  if (name) return tok("name", i + name[0].length);
  if (src.startsWith("::", i) || src.startsWith("=>", i) || src.startsWith("->", i))
    return tok("punct", i + 2);
  return tok("punct", i + 1);
}

/** The tokens of a whole file, or undefined where it does not scan. Pure. */
export function rustTokens(src: string): RustTok[] | undefined {
  const toks: RustTok[] = [];
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
      i = blockEnd(src, i);
      if (i < 0) return undefined;
      continue;
    }
    const t = tokenAt(src, i);
    if (!t) return undefined;
    toks.push(t);
    i = t.end;
  }
  return toks;
}
