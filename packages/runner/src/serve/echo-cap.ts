/**
 * What an error answer may echo of what a client sent. Every serve error names the value it
 * refuses (an id, a path, a field's value), and a client controls its length: a 5000-character id
 * was sent back whole. Any run of non-space characters longer than `ECHO_MAX` is cut to its start
 * and told by its length, so the answer stays small and still says what was wrong. Applied to every
 * error answer (message and extra fields), not at each echo. Pure.
 */

export const ECHO_MAX = 100;
const KEEP = 60;
const LONG_RUN = new RegExp(`\\S{${ECHO_MAX + 1},}`, "g");

/** `text` with every non-space run over ECHO_MAX cut: `<first 60>…(<n> chars)`. Pure. */
export function capEchoes(text: string): string {
  return text.replace(LONG_RUN, (run) => `${run.slice(0, KEEP)}…(${run.length} chars)`);
}

/** capEchoes over every string inside a JSON value (keys too). Pure. */
export function capEchoesDeep(v: unknown): unknown {
  if (typeof v === "string") return capEchoes(v);
  if (Array.isArray(v)) return v.map(capEchoesDeep);
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, e]) => [capEchoes(k), capEchoesDeep(e)]));
  return v;
}
