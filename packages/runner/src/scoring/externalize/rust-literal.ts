import type { RustTok } from "./rust-tokens.js";

/**
 * A Rust literal expression's `{:?}` (Debug) text, rendered on the host the way the standard
 * library renders the value the test compares against: integers, bools, plain strings and chars
 * (printable ASCII, box-drawing and block characters; `\n`, `\t`, `\"`, `\\` escapes), floats
 * of at most six significant digits (f32 and f64 then render alike), `None`, `Some(x)`, `Ok(x)`,
 * `Err(x)`, tuples, arrays, slices and `vec![…]` of those. Anything else (a path, a call, a raw or
 * byte string, a float Debug might print in exponent form) is no literal: undefined. Pure.
 */

const INT = /^(\d[\d_]*)(?:[iu](?:8|16|32|64|128|size))?$/;
const FLOAT = /^(\d[\d_]*\.\d[\d_]*)(?:f32|f64)?$/;
/** Characters whose Debug rendering is the character itself. */
const PLAIN = /^[\x20-\x7e\u2500-\u259f]$/u;

function stringBody(body: string, quote: string): string | undefined {
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === "\\") {
      const e = body[++i];
      if (e === "n" || e === "t" || e === "\\" || e === quote) out += `\\${e}`;
      else return undefined;
    } else if (c === quote || c === "\\" || !PLAIN.test(c)) return undefined;
    else out += c;
  }
  return out;
}

function numberText(t: RustTok, negative: boolean): string | undefined {
  const sign = negative ? "-" : "";
  const i = INT.exec(t.text);
  if (i) return `${sign}${BigInt(i[1]!.replaceAll("_", ""))}`;
  const f = FLOAT.exec(t.text);
  if (!f) return undefined;
  const digits = f[1]!.replaceAll("_", "");
  const n = Number(digits);
  const significant = digits.replace(".", "").replace(/^0+/, "").replace(/0+$/, "");
  if (significant.length > 6 || (n !== 0 && (n < 1e-4 || n >= 1e15))) return undefined;
  if (n === 0) return `${sign}0.0`;
  return `${sign}${String(n)}${Number.isInteger(n) ? ".0" : ""}`;
}

/** The Debug text of tokens `[i, end)` of `toks`, or undefined. */
export function rustDebug(toks: readonly RustTok[], i: number, end: number): string | undefined {
  const r = parse(toks, i, end);
  return r && r.next === end ? r.text : undefined;
}

type Parsed = { text: string; next: number } | undefined;

/** Comma-separated items from `i` up to the closing `close` punct; `[a, b]`'s inside. */
function items(
  toks: readonly RustTok[],
  i: number,
  end: number,
  close: string,
): { texts: string[]; next: number } | undefined {
  const texts: string[] = [];
  while (i < end && toks[i]!.text !== close) {
    const p = parse(toks, i, end);
    if (!p) return undefined;
    texts.push(p.text);
    i = p.next;
    if (toks[i]?.text === ",") i++;
    else if (toks[i]?.text !== close) return undefined;
  }
  return i < end ? { texts, next: i + 1 } : undefined;
}

function parse(toks: readonly RustTok[], i: number, end: number): Parsed {
  const t = toks[i];
  if (!t || i >= end) return undefined;
  if (t.text === "&") return parse(toks, i + 1, end);
  if (t.text === "-" && toks[i + 1]?.kind === "num") {
    const n = numberText(toks[i + 1]!, true);
    return n === undefined ? undefined : { text: n, next: i + 2 };
  }
  if (t.kind === "num") {
    const n = numberText(t, false);
    return n === undefined ? undefined : { text: n, next: i + 1 };
  }
  if (t.kind === "str" || t.kind === "char") {
    const q = t.kind === "str" ? '"' : "'";
    const body = stringBody(t.text.slice(1, -1), q);
    return body === undefined ? undefined : { text: `${q}${body}${q}`, next: i + 1 };
  }
  if (t.kind !== "name" && t.text !== "[" && t.text !== "(") return undefined;
  if (t.text === "true" || t.text === "false" || t.text === "None") return { text: t.text, next: i + 1 };
  if (["Some", "Ok", "Err"].includes(t.text) && toks[i + 1]?.text === "(") {
    const inner = items(toks, i + 2, end, ")");
    return inner?.texts.length === 1 ? { text: `${t.text}(${inner.texts[0]})`, next: inner.next } : undefined;
  }
  const vec = t.text === "vec" && toks[i + 1]?.text === "!" && toks[i + 2]?.text === "[";
  if (t.text === "[" || vec) {
    const inner = items(toks, vec ? i + 3 : i + 1, end, "]");
    return inner && { text: `[${inner.texts.join(", ")}]`, next: inner.next };
  }
  if (t.text === "(") {
    const inner = items(toks, i + 1, end, ")");
    // `(x)` is x; `(x,)` and `(x, y)` are tuples; `()` is not taken
    if (!inner?.texts.length) return undefined;
    const tuple = inner.texts.length > 1 || toks[inner.next - 2]?.text === ",";
    return {
      text: tuple ? `(${inner.texts.join(", ")}${inner.texts.length === 1 ? "," : ""})` : inner.texts[0]!,
      next: inner.next,
    };
  }
  return undefined;
}
