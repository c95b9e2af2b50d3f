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
const MAX_PIECE = 16;

const count = (text: string, piece: string) => {
  let n = 0;
  for (let i = text.indexOf(piece); i >= 0; i = text.indexOf(piece, i + 1)) n++;
  return n;
};

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** How often `context` writes `literal` as a whole token (not inside a longer word or number). */
const tokenCount = (context: string, literal: string) =>
  [...context.matchAll(new RegExp(`(?<![\\w.])${escapeRe(literal)}(?![\\w.])`, "g"))].length;

/** The span of `a` that differs from `b` (common prefix and suffix taken off). */
function changedSpan(a: string, b: string): { start: number; end: number } {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let tail = 0;
  while (tail < a.length - start && tail < b.length - start && a.at(-1 - tail) === b.at(-1 - tail)) tail++;
  return { start, end: a.length - tail };
}

/**
 * The counts, in `context`, of every piece of `literal` (2 to MAX_PIECE characters) that covers its
 * changed span, sorted, after the whole literal's token count. `count` may be memoised. Pure.
 */
function signature(
  literal: string,
  span: { start: number; end: number },
  counted: (piece: string) => number,
  token: number,
): number[] {
  const pieces: number[] = [];
  const width = Math.max(1, span.end - span.start);
  for (let len = Math.max(2, width); len <= Math.min(MAX_PIECE, literal.length); len++)
    for (let s = Math.max(0, span.end - len); s <= Math.min(span.start, literal.length - len); s++)
      pieces.push(counted(literal.slice(s, s + len)));
  return [token, ...pieces.sort((x, y) => x - y)];
}

/**
 * How far a changed value of `original` is from it in what the rest of the hidden files
 * (`context`) write: the summed differences of the counts of the whole value (as a token) and of
 * every piece around the change. 0: no count of the files' text tells the two apart. The returned
 * function memoises counts (one literal, many candidate values). Pure.
 */
export function contextDistance(original: string, context: string): (variant: string) => number {
  const memo = new Map<string, number>();
  const counted = (piece: string) => {
    const known = memo.get(piece);
    if (known !== undefined) return known;
    const n = count(context, piece);
    memo.set(piece, n);
    return n;
  };
  const originalToken = tokenCount(context, original);
  return (variant) => {
    if (variant === original) return 0;
    const a = signature(original, changedSpan(original, variant), counted, originalToken);
    const b = signature(variant, changedSpan(variant, original), counted, tokenCount(context, variant));
    const n = Math.max(a.length, b.length);
    let d = 0;
    for (let i = 0; i < n; i++) d += Math.abs((a[i] ?? 0) - (b[i] ?? 0));
    return d;
  };
}

/**
 * The text code under test reads beside the literal at `span` of `text`: the file without that
 * literal (a NUL where it was, so nothing joins across it) and the other hidden files. Pure.
 */
export function contextOf(
  text: string,
  span: { start: number; end: number },
  others: readonly string[],
): string {
  return [`${text.slice(0, span.start)}\0${text.slice(span.end)}`, ...others].join("\0");
}
