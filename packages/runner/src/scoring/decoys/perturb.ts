import type { Lang } from "./scan.js";

/**
 * Other values for one literal, of the same type and look, for a test's decoys. The values of one
 * literal are symmetric: each differs from the original, and from each other, at the same place by
 * one character of the same kind (digit for digit, letter for letter, one of the literal's own
 * characters otherwise) or one digit — so no value sits in the middle of the others and gives the
 * original away. A number stays within the smallest integer type that held it (a compiled test
 * still compiles); booleans flip; an exception class becomes unrelated built-in ones. Pure, given
 * `rand` (a uniform integer in [0, n)).
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

const LOWER = "etaoinshrdlucmfwypvbgkqjxz";
const UPPER = LOWER.toUpperCase();
const DIGITS = "0123456789";

/** Units that may stand in for `u` (same kind), the literal's own first. */
function standIns(u: string, own: readonly string[]): string[] {
  const same = (re: RegExp, pool: string) => [...new Set([...own.filter((o) => re.test(o)), ...pool])];
  if (/^[0-9]$/.test(u)) return same(/^[0-9]$/, DIGITS);
  if (/^[a-z]$/.test(u)) return same(/^[a-z]$/, LOWER);
  if (/^[A-Z]$/.test(u)) return same(/^[A-Z]$/, UPPER);
  return [...new Set(own.filter((o) => !/^[0-9a-zA-Z]$/.test(o)))];
}

/** Up to `max` symmetric variants of `units`: one position, different stand-ins. */
function unitVariants(units: string[], rand: Rand, max: number, greedyEscapes: boolean): string[][] {
  if (!units.length) return [[" "]];
  // C reads every hex digit after \x and up to three octal digits after \: no character goes right
  // after such an escape, and none is swapped in
  const greedy = (u: string | undefined) => greedyEscapes && u !== undefined && /^\\(x|[0-7])/.test(u);
  const order = shuffled(
    units.map((_, i) => i),
    rand,
  ).filter((i) => !greedy(units[i - 1]));
  // the first place (in random order) with `max` stand-ins, else the place with the most
  let best: { i: number; cands: string[] } | undefined;
  for (const i of order) {
    const cands = shuffled(
      standIns(units[i]!, units).filter((c) => c !== units[i] && !greedy(c)),
      rand,
    ).slice(0, max);
    if (cands.length > (best?.cands.length ?? 0)) best = { i, cands };
    if (cands.length >= max) break;
  }
  if (best) return best.cands.map((c) => units.map((x, k) => (k === best.i ? c : x)));
  // one kind of character only, nothing of its kind to swap in: double one
  if (!order.length) return [];
  const i = order[rand(order.length)]!;
  return [[...units.slice(0, i + 1), units[i]!, ...units.slice(i + 1)]];
}

/** `xs` in random order (Fisher–Yates with `rand`). Pure given `rand`. */
export function shuffled<T>(xs: readonly T[], rand: Rand): T[] {
  const out = [...xs];
  for (let i = out.length - 1; i > 0; i--) {
    const j = rand(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function stringVariants(text: string, lang: Lang, rand: Rand, max: number): string[] {
  const m = QUOTES[lang].exec(text);
  if (!m) return [];
  const [, prefix = "", quote = '"', body = ""] = m;
  const units = isRaw(lang, prefix, quote) ? [...body] : (body.match(UNIT) ?? []);
  // a raw literal must not gain its own closing quote
  if (isRaw(lang, prefix, quote) && units.some((u) => u.includes(quote[0]!))) return [];
  const closing = text.slice(prefix.length + quote.length + body.length);
  return unitVariants(units, rand, max, lang === "c").map(
    (next) => `${prefix}${quote}${next.join("")}${closing}`,
  );
}

/** The smallest integer range (i8, u8, i16, u16, i32, u32, …) that holds `n`: a changed value stays in it. */
const boundOf = (n: number) =>
  [127, 255, 32_767, 65_535, 2_147_483_647, 4_294_967_295].find((b) => n <= b) ?? Number.MAX_SAFE_INTEGER;

function numberVariants(text: string, rand: Rand, max: number): string[] {
  const m = /^(\d[\d_]*)((?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)([a-z][a-z0-9]*)?$/.exec(text);
  if (!m) return [];
  const [, int = "", frac = "", suffix = ""] = m;
  const digits = int.replaceAll("_", "");
  if (digits.length > 15) return [];
  const bound = boundOf(Number(digits));
  for (const i of shuffled(
    [...digits].map((_, k) => k),
    rand,
  )) {
    const options = shuffled([...DIGITS], rand)
      .filter((d) => d !== digits[i] && !(i === 0 && d === "0" && digits.length > 1))
      .map((d) => digits.slice(0, i) + d + digits.slice(i + 1))
      .filter((next) => Number(next) <= bound)
      .slice(0, max);
    if (options.length)
      return options.map((next) => {
        const grouped = int.includes("_") ? next.replace(/\B(?=(\d{3})+$)/g, "_") : next;
        return `${grouped}${frac}${suffix}`;
      });
  }
  return [];
}

/**
 * Built-in exception classes unrelated to each other and rarely the base of a library's own
 * errors; the decoy of an exception test expects one of them instead.
 */
const UNRELATED: Partial<Record<Lang, string[]>> = {
  python: ["TypeError", "ZeroDivisionError", "AttributeError", "IndexError", "RuntimeError", "ValueError"],
  js: ["TypeError", "RangeError", "SyntaxError", "ReferenceError", "URIError", "EvalError"],
};

function otherClasses(text: string, lang: Lang, rand: Rand, max: number): string[] {
  const quoted = /^(["'])(\w+)\1$/.exec(text);
  const name = quoted ? quoted[2]! : text;
  const pool = (UNRELATED[lang] ?? []).filter((c) => c !== name && !name.endsWith(`.${c}`));
  return shuffled(pool, rand)
    .slice(0, max)
    .map((pick) => (quoted ? `${quoted[1]}${pick}${quoted[1]}` : pick));
}

/** Stand-ins asked for per wanted variant, so that those naming a written value can be dropped. */
const SPARE = 4;

/** The text a string literal spells, as written between its quotes (the literal itself otherwise). */
export function literalValue(text: string, lang: Lang): string {
  return QUOTES[lang].exec(text)?.[3] ?? text;
}

/**
 * Up to `max` other values for `text` (one literal), distinct and symmetric; [] when none. A
 * containment check never gets a value in `written` (the values and words the test file itself
 * spells: another key, field or expected value): `"bla" in result` changed to `"bli"` holds when
 * `bli` is a key the test made too, and a correct solution would pass that decoy. Pure given `rand`.
 */
export function literalVariants(
  text: string,
  lang: Lang,
  kind: "equal" | "contains" | "class",
  rand: Rand,
  max: number,
  written: ReadonlySet<string> = new Set(),
): string[] {
  if (kind === "class") return otherClasses(text, lang, rand, max);
  const empty: Record<string, string> = { "[]": "[0]", "()": "(0,)", "{}": "{0}" };
  if (lang === "python" && empty[text]) return kind === "equal" ? [empty[text]] : [];
  const flip: Record<string, string> = { true: "false", false: "true", True: "False", False: "True" };
  if (flip[text]) return kind === "equal" ? [flip[text]] : [];
  if (/^\d/.test(text)) return kind === "equal" ? numberVariants(text, rand, max) : [];
  // an equality holds for one value only: a written value is no risk there
  if (kind === "equal") return stringVariants(text, lang, rand, max);
  const all = stringVariants(text, lang, rand, max * SPARE);
  return all.filter((v) => !written.has(literalValue(v, lang))).slice(0, max);
}

/** One other value for `text`, or undefined. Pure given `rand`. */
export function perturbLiteral(
  text: string,
  lang: Lang,
  kind: "equal" | "contains" | "class",
  rand: Rand,
): string | undefined {
  return literalVariants(text, lang, kind, rand, 1)[0];
}
