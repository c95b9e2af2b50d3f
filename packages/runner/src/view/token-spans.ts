/**
 * How the token view lays a sequence out: runs of trained and masked tokens, the long masked runs
 * (the prompt, big tool results) folded so the view opens at what was trained. Pure, no imports:
 * the browser bundle uses it.
 */
export interface TokenSpan {
  readonly start: number;
  /** Exclusive. */
  readonly end: number;
  readonly trained: boolean;
  /** A masked run long enough to be folded (drawn only when unfolded). */
  readonly folded: boolean;
}

/** Masked runs at least this long are folded. */
export const FOLD_AT = 200;

/** Splits `masks` (-100: not trained) into runs; masked runs of `foldAt` tokens or more are folded. */
export function tokenSpans(masks: readonly number[], foldAt = FOLD_AT): TokenSpan[] {
  const spans: TokenSpan[] = [];
  let start = 0;
  for (let i = 1; i <= masks.length; i++) {
    const trained = masks[start] !== -100;
    if (i < masks.length && (masks[i] !== -100) === trained) continue;
    spans.push({ start, end: i, trained, folded: !trained && i - start >= foldAt });
    start = i;
  }
  return spans;
}
