/**
 * Nomad's JSON API carries every duration as an integer number of nanoseconds (Go's
 * `time.Duration`). These helpers keep that unit explicit. A JS number holds integers exactly up
 * to 2^53 ns ≈ 104 days, far above any duration a job spec needs.
 */

/** An integer number of nanoseconds. */
export type Nanoseconds = number;

const NS_PER_MS = 1_000_000;

export const nanoseconds = (n: number): Nanoseconds => Math.round(n);
export const milliseconds = (n: number): Nanoseconds => Math.round(n * NS_PER_MS);
export const seconds = (n: number): Nanoseconds => Math.round(n * 1_000 * NS_PER_MS);
export const minutes = (n: number): Nanoseconds => seconds(n * 60);
export const hours = (n: number): Nanoseconds => seconds(n * 3_600);

/** Nanoseconds → milliseconds (rounded down). */
export const toMilliseconds = (ns: Nanoseconds): number => Math.floor(ns / NS_PER_MS);

/** The `wait` query parameter of a blocking query, as the Go client writes it: `<ms>ms`. */
export function formatWait(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0)
    throw new RangeError(`wait must be a non-negative number of ms, got ${ms}`);
  return `${Math.floor(ms)}ms`;
}

/** Renders nanoseconds like Go's `time.Duration.String()` for messages (`1h0m0s`, `150ms`). */
export function formatDuration(ns: Nanoseconds): string {
  if (ns === 0) return "0s";
  const sign = ns < 0 ? "-" : "";
  let rest = Math.abs(ns);
  if (rest < NS_PER_MS * 1_000) {
    if (rest < 1_000) return `${sign}${rest}ns`;
    if (rest < NS_PER_MS) return `${sign}${rest / 1_000}µs`;
    return `${sign}${rest / NS_PER_MS}ms`;
  }
  const h = Math.floor(rest / (3_600 * 1e9));
  rest -= h * 3_600 * 1e9;
  const m = Math.floor(rest / (60 * 1e9));
  rest -= m * 60 * 1e9;
  const s = rest / 1e9;
  if (h > 0) return `${sign}${h}h${m}m${s}s`;
  if (m > 0) return `${sign}${m}m${s}s`;
  return `${sign}${s}s`;
}
