/**
 * What the rest of the hidden files tell about a literal's value. A decoy changes one literal, and
 * code under test can read the hidden files: a real value that the files also write elsewhere
 * (another test expects "1.0 KiB" too) or that shares its pieces with its neighbours (a list of
 * "1.0 KiB", "1.0 MiB", …) is told from a changed value the files write nowhere, by counting. So
 * decoy values are chosen to be written by the rest of the files as often as the real one — whole,
 * and in every piece around the change — exactly where a value of the same kind is, else as
 * nearly as any (red-team attack `py-real-value-from-context`). Pure.
 */

/** Longest piece around the change that is compared (longer ones are compared whole, as tokens). */
const MAX_PIECE = 8;

type Span = { readonly start: number; readonly end: number };

/**
 * The hidden files' text, indexed once for counting pieces: every 1- and 2-character piece's
 * positions, so a count costs the occurrences of its rarest pair, not a scan of the files (a
 * SWE-bench test file runs to hundreds of KiB and every literal asks for thousands of counts).
 */
export interface ContextIndex {
  /** The files joined by NUL; `offsets[i]` is where file i starts. */
  readonly text: string;
  readonly offsets: readonly number[];
  /** Where `piece` is written, leaving out occurrences that overlap `own` (the literal itself). */
  occurrences(piece: string, own: Span): number[];
  /** How often: `occurrences(piece, own).length`. */
  count(piece: string, own: Span): number;
}

/** Indexes `texts` (the hidden files, in order) for ContextIndex.count. Pure. */
export function contextIndex(texts: readonly string[]): ContextIndex {
  const text = texts.join("\0");
  const offsets: number[] = [];
  let at = 0;
  for (const t of texts) {
    offsets.push(at);
    at += t.length + 1;
  }
  const where = new Map<string, number[]>();
  const add = (key: string, i: number) => {
    const list = where.get(key);
    if (list) list.push(i);
    else where.set(key, [i]);
  };
  for (let i = 0; i < text.length; i++) {
    add(text[i]!, i);
    if (i + 1 < text.length) add(text.slice(i, i + 2), i);
  }
  const occurrences = (piece: string, own: Span) => {
    if (piece === "") return [];
    // anchor on the piece's rarest 1- or 2-character part
    let anchor = 0;
    let list = where.get(piece.slice(0, 2)) ?? [];
    for (let k = 1; k + 2 <= piece.length && list.length; k++) {
      const l = where.get(piece.slice(k, k + 2)) ?? [];
      if (l.length < list.length) [anchor, list] = [k, l];
    }
    const out: number[] = [];
    for (const p of list) {
      const q = p - anchor;
      if (q >= 0 && !(q < own.end && q + piece.length > own.start) && text.startsWith(piece, q)) out.push(q);
    }
    return out;
  };
  return { text, offsets, occurrences, count: (piece, own) => occurrences(piece, own).length };
}

/** The span of `a` that differs from `b` (common prefix and suffix taken off). */
function changedSpan(a: string, b: string): Span {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let tail = 0;
  while (tail < a.length - start && tail < b.length - start && a.at(-1 - tail) === b.at(-1 - tail)) tail++;
  return { start, end: a.length - tail };
}

/** The counts of every piece of `literal` (2 to MAX_PIECE characters) covering `span`, sorted. Pure. */
function pieceCounts(literal: string, span: Span, counted: (piece: string) => number): number[] {
  const pieces: number[] = [];
  const width = Math.max(1, span.end - span.start);
  for (let len = Math.max(2, width); len <= Math.min(MAX_PIECE, literal.length); len++)
    for (let s = Math.max(0, span.end - len); s <= Math.min(span.start, literal.length - len); s++)
      pieces.push(counted(literal.slice(s, s + len)));
  return pieces.sort((x, y) => x - y);
}

/**
 * How far a changed value of `original` (the literal at `own`, in the index's joined text) is from
 * it in what the rest of the hidden files write: the summed differences of the counts of the whole
 * value (as a token: not inside a longer word or number) and of every piece around the change. 0:
 * no count of the files' text tells the two apart. Memoises counts (one literal, many values). Pure.
 */
export function contextDistance(
  original: string,
  index: ContextIndex,
  own: Span,
): (variant: string) => number {
  const memo = new Map<string, number>();
  const counted = (piece: string) => {
    const known = memo.get(piece);
    if (known !== undefined) return known;
    const n = index.count(piece, own);
    memo.set(piece, n);
    return n;
  };
  const word = (c: string | undefined) => c !== undefined && /[\w.]/.test(c);
  const tokens = (literal: string) =>
    index
      .occurrences(literal, own)
      .filter((q) => !word(index.text[q - 1]) && !word(index.text[q + literal.length])).length;
  const originalTokens = tokens(original);
  return (variant) => {
    if (variant === original) return 0;
    const a = [originalTokens, ...pieceCounts(original, changedSpan(original, variant), counted)];
    const b = [tokens(variant), ...pieceCounts(variant, changedSpan(variant, original), counted)];
    let d = 0;
    for (let i = 0; i < Math.max(a.length, b.length); i++) d += Math.abs((a[i] ?? 0) - (b[i] ?? 0));
    return d;
  };
}
