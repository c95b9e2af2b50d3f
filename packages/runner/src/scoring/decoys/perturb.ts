import type { Lang } from "./scan.js";

/**
 * A literal with another value of the same type and a plausible look: a string with one character
 * dropped, doubled, swapped with its neighbour or replaced by another of its own characters; a
 * number with one digit changed (staying within the smallest integer type that held it, so a
 * compiled test still compiles). For `contains` checks a string is only changed by replacing or
 * doubling a character (a shorter text could still occur). Undefined when it cannot be changed.
 * Pure, given `rand` (a uniform integer in [0, n)).
 */

export type Rand = (n: number) => number;

const QUOTES: Record<Lang, RegExp> = {
  python: /^([rRbBuU]{0,2})('''|"""|'|")([\s\S]*)\2$/,
  rust: /^(b?r#*|b?)(")([\s\S]*)"#*$/,
  go: /^()("|`)([\s\S]*)\2$/,
  js: /^()("|'|`)([\s\S]*)\2$/,
  c: /^(L|u8|u|U)?(")([\s\S]*)"$/,
};

const UNIT =
  /\\(?:x[0-9a-fA-F]{2}|u\{[0-9a-fA-F]+\}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{1,3}|[\s\S])|[\s\S]/gu;

const isRaw = (lang: Lang, prefix: string, quote: string) =>
  /r/i.test(prefix) || (lang === "go" && quote === "`");

function mutateUnits(units: string[], kind: "equal" | "contains", rand: Rand): string[] | undefined {
  const distinct = [...new Set(units)];
  const ops: ((u: string[]) => string[] | undefined)[] = [
    // double one character
    (u) => {
      if (!u.length) return undefined;
      const i = rand(u.length);
      return [...u.slice(0, i + 1), u[i]!, ...u.slice(i + 1)];
    },
    // replace one character by another of the literal's own characters
    (u) => {
      if (distinct.length < 2) return undefined;
      const i = rand(u.length);
      const others = distinct.filter((d) => d !== u[i]);
      return u.map((c, k) => (k === i ? others[rand(others.length)]! : c));
    },
  ];
  if (kind === "equal") {
    ops.push(
      (u) => {
        if (!u.length) return undefined;
        const i = rand(u.length);
        return [...u.slice(0, i), ...u.slice(i + 1)];
      },
      (u) => {
        const pairs = u.flatMap((c, i) => (i + 1 < u.length && c !== u[i + 1] ? [i] : []));
        if (!pairs.length) return undefined;
        const i = pairs[rand(pairs.length)]!;
        const out = [...u];
        [out[i], out[i + 1]] = [out[i + 1]!, out[i]!];
        return out;
      },
    );
  }
  if (!units.length) return kind === "equal" ? [" "] : undefined;
  for (let tries = 0; tries < 8; tries++) {
    const r = ops[rand(ops.length)]!(units);
    if (r && r.join("") !== units.join("")) return r;
  }
  return ops[0]!(units);
}

function perturbString(text: string, lang: Lang, kind: "equal" | "contains", rand: Rand): string | undefined {
  const m = QUOTES[lang].exec(text);
  if (!m) return undefined;
  const [, prefix = "", quote = '"', body = ""] = m;
  const units = isRaw(lang, prefix, quote) ? [...body] : (body.match(UNIT) ?? []);
  // a raw literal must not gain its own closing quote
  const safe = units.filter((u) => !u.includes(quote[0]!) || !isRaw(lang, prefix, quote));
  if (safe.length !== units.length) return undefined;
  const next = mutateUnits(units, kind, rand);
  if (!next) return undefined;
  const closing = text.slice(prefix.length + quote.length + body.length);
  return `${prefix}${quote}${next.join("")}${closing}`;
}

/** The smallest integer range (i8, u8, i16, u16, i32, u32, …) that holds `n`: a changed value stays in it. */
const boundOf = (n: number) =>
  [127, 255, 32_767, 65_535, 2_147_483_647, 4_294_967_295].find((b) => n <= b) ?? Number.MAX_SAFE_INTEGER;

function perturbNumber(text: string, rand: Rand): string | undefined {
  const m = /^(\d[\d_]*)((?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)([a-z][a-z0-9]*)?$/.exec(text);
  if (!m) return undefined;
  const [, int = "", frac = "", suffix = ""] = m;
  const digits = int.replaceAll("_", "");
  if (digits.length > 15) return undefined;
  const n = Number(digits);
  const bound = boundOf(n);
  for (let tries = 0; tries < 16; tries++) {
    const i = rand(digits.length);
    const d = rand(10);
    if (String(d) === digits[i] || (i === 0 && d === 0 && digits.length > 1)) continue;
    const next = digits.slice(0, i) + String(d) + digits.slice(i + 1);
    if (Number(next) > bound) continue;
    const grouped = int.includes("_") ? next.replace(/\B(?=(\d{3})+$)/g, "_") : next;
    return `${grouped}${frac}${suffix}`;
  }
  return undefined;
}

/**
 * Built-in exception classes unrelated to each other and rarely the base of a library's own
 * errors; the decoy of an exception test expects one of them instead.
 */
const UNRELATED: Partial<Record<Lang, string[]>> = {
  python: ["TypeError", "ZeroDivisionError", "AttributeError", "IndexError", "RuntimeError", "ValueError"],
  js: ["TypeError", "RangeError", "SyntaxError", "ReferenceError", "URIError", "EvalError"],
};

function otherClass(text: string, lang: Lang, rand: Rand): string | undefined {
  const quoted = /^(["'])(\w+)\1$/.exec(text);
  const name = quoted ? quoted[2]! : text;
  const pool = (UNRELATED[lang] ?? []).filter((c) => c !== name && !name.endsWith(`.${c}`));
  if (!pool.length) return undefined;
  const pick = pool[rand(pool.length)]!;
  return quoted ? `${quoted[1]}${pick}${quoted[1]}` : pick;
}

/** `text` (one literal) with another value, or undefined. Pure given `rand`. */
export function perturbLiteral(
  text: string,
  lang: Lang,
  kind: "equal" | "contains" | "class",
  rand: Rand,
): string | undefined {
  if (kind === "class") return otherClass(text, lang, rand);
  const empty: Record<string, string> = { "[]": "[0]", "()": "(0,)", "{}": "{0}" };
  if (lang === "python" && empty[text]) return empty[text];
  if (/^\d/.test(text)) return kind === "equal" ? perturbNumber(text, rand) : undefined;
  const flip: Record<string, string> = { true: "false", false: "true", True: "False", False: "True" };
  if (flip[text]) return kind === "equal" ? flip[text] : undefined;
  return perturbString(text, lang, kind, rand);
}
