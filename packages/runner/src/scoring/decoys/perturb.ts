import { type ClassBases, decoyClasses, isBuiltInClass } from "./exception-classes.js";
import type { Lang } from "./scan.js";

/**
 * Other values for one literal, of the same type and look, for a test's decoys. The values of one
 * literal are symmetric: each differs from the original, and from each other, at the same place by
 * one character of the same kind (digit for digit, letter for letter, one of the literal's own
 * characters otherwise) or one digit — so no value sits in the middle of the others and gives the
 * original away. A number stays within the smallest integer type that held it (a compiled test
 * still compiles); booleans flip; an exception class becomes another of the repository's or an unrelated built-in one. Pure, given
 * `rand` (a uniform integer in [0, n)).
 */

export type Rand = (n: number) => number;

/**
 * How far a changed literal (its whole text) is from the original in what the rest of the hidden
 * files write (decoys/context.ts): decoys take the nearest values, 0 where any value of the kind is.
 */
export type Cost = (variant: string) => number;

/** One place's candidate values, nearest first (ties in the given, random, order), `max` kept. */
function nearest<T>(
  cands: readonly T[],
  max: number,
  cost: ((c: T) => number) | undefined,
): { picked: T[]; worst: number } {
  if (cost === undefined) return { picked: cands.slice(0, max), worst: 0 };
  const scored = cands.map((c) => ({ c, d: cost(c) })).sort((a, b) => a.d - b.d);
  const picked = scored.slice(0, max);
  return { picked: picked.map((p) => p.c), worst: picked.at(-1)?.d ?? 0 };
}

/**
 * Of the places' candidate sets (in random order), the one to use: without a cost the first with
 * `max` values, else the one with the most; with a cost the nearest among those with the most
 * values (the first of equals). Pure.
 */
export function choosePlace<P>(
  places: readonly { place: P; picked: readonly string[]; worst: number }[],
  max: number,
  costed: boolean,
): { place: P; picked: readonly string[] } | undefined {
  let best: (typeof places)[number] | undefined;
  for (const p of places) {
    if (!p.picked.length) continue;
    const more = p.picked.length > (best?.picked.length ?? 0);
    const nearer =
      costed && best !== undefined && p.picked.length === best.picked.length && p.worst < best.worst;
    if (!more && !nearer) continue;
    best = p;
    if (p.picked.length >= max && (!costed || p.worst === 0)) break;
  }
  return best;
}

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

/**
 * Up to `max` symmetric variants of `units`: one position, different stand-ins; with `cost`, the
 * position and stand-ins nearest the original (see choosePlace).
 */
function unitVariants(
  units: string[],
  rand: Rand,
  max: number,
  greedyEscapes: boolean,
  cost?: (next: string[]) => number,
): string[][] {
  if (!units.length) return [[" "]];
  // C reads every hex digit after \x and up to three octal digits after \: no character goes right
  // after such an escape, and none is swapped in
  const greedy = (u: string | undefined) => greedyEscapes && u !== undefined && /^\\(x|[0-7])/.test(u);
  const order = shuffled(
    units.map((_, i) => i),
    rand,
  ).filter((i) => !greedy(units[i - 1]));
  const at = (i: number, c: string) => units.map((x, k) => (k === i ? c : x));
  // with a cost, a bounded number of places is weighed (each weighs every stand-in)
  const places = function* () {
    for (const i of cost === undefined ? order : order.slice(0, COSTED_PLACES)) {
      const cands = shuffled(
        standIns(units[i]!, units).filter((c) => c !== units[i] && !greedy(c)),
        rand,
      );
      const { picked, worst } = nearest(cands, max, cost && ((c: string) => cost(at(i, c))));
      yield { place: i, picked, worst };
    }
  };
  const best = choosePlace([...places()], max, cost !== undefined);
  if (best) return best.picked.map((c) => at(best.place, c));
  // one kind of character only, nothing of its kind to swap in: other lengths of it
  if (!order.length) return [];
  return lengthVariants(units, order[rand(order.length)]!, rand, max);
}

/**
 * Up to `max` variants of `units` with unit `i` repeated or dropped: as many shorter as a uniform
 * draw says (as the length allows), the rest longer, so the real value's rank by length — and by
 * how often prose writes it, shorter runs being written inside longer ones — is uniform among its
 * decoys, not always the shortest (red-team oracle, mention rule). Pure, given `rand`.
 */
export function lengthVariants(units: readonly string[], i: number, rand: Rand, max: number): string[][] {
  const shorter = rand(Math.min(max, units.length - 1) + 1);
  const out: string[][] = [];
  // a run of one unit (the only case that comes here): dropping any k is dropping the last k
  for (let k = 1; k <= shorter; k++) out.push(units.slice(0, units.length - k));
  for (let k = 1; out.length < max; k++)
    out.push([...units.slice(0, i + 1), ...Array<string>(k).fill(units[i]!), ...units.slice(i + 1)]);
  return shuffled(out, rand);
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

function stringVariants(text: string, lang: Lang, rand: Rand, max: number, cost?: Cost): string[] {
  const m = QUOTES[lang].exec(text);
  if (!m) return [];
  const [, prefix = "", quote = '"', body = ""] = m;
  const units = isRaw(lang, prefix, quote) ? [...body] : (body.match(UNIT) ?? []);
  // a raw literal must not gain its own closing quote
  if (isRaw(lang, prefix, quote) && units.some((u) => u.includes(quote[0]!))) return [];
  const closing = text.slice(prefix.length + quote.length + body.length);
  const whole = (next: string[]) => `${prefix}${quote}${next.join("")}${closing}`;
  return unitVariants(units, rand, max, lang === "c", cost && ((next) => cost(whole(next)))).map(whole);
}

/** The smallest integer range (i8, u8, i16, u16, i32, u32, …) that holds `n`: a changed value stays in it. */
const boundOf = (n: number) =>
  [127, 255, 32_767, 65_535, 2_147_483_647, 4_294_967_295].find((b) => n <= b) ?? Number.MAX_SAFE_INTEGER;

function numberVariants(text: string, rand: Rand, max: number, cost?: Cost): string[] {
  const m = /^(\d[\d_]*)((?:\.\d[\d_]*)?(?:[eE][+-]?\d+)?)([a-z][a-z0-9]*)?$/.exec(text);
  if (!m) return [];
  const [, int = "", frac = "", suffix = ""] = m;
  const digits = int.replaceAll("_", "");
  if (digits.length > 15) return [];
  const bound = boundOf(Number(digits));
  const places = shuffled(
    [...digits].map((_, k) => k),
    rand,
  ).map((i) => {
    const options = shuffled([...DIGITS], rand)
      .filter((d) => d !== digits[i] && !(i === 0 && d === "0" && digits.length > 1))
      .map((d) => digits.slice(0, i) + d + digits.slice(i + 1))
      .filter((next) => Number(next) <= bound)
      .map((next) => {
        const grouped = int.includes("_") ? next.replace(/\B(?=(\d{3})+$)/g, "_") : next;
        return `${grouped}${frac}${suffix}`;
      });
    return { place: i, ...nearest(options, max, cost) };
  });
  // without a cost: the first place (in random order) with a value, as many as it has up to `max`
  if (cost === undefined) return places.find((p) => p.picked.length)?.picked ?? [];
  return [...(choosePlace(places, max, true)?.picked ?? [])];
}

/**
 * Other classes for an exception test's decoys (decoys/exception-classes.ts): of the repository's
 * own when the real one is (so a custom class does not single out the real copy), built-ins
 * otherwise and to fill up; never an ancestor or descendant of the real class.
 */
function otherClasses(
  text: string,
  lang: Lang,
  rand: Rand,
  max: number,
  written: ReadonlySet<string>,
  bases: ClassBases,
): string[] {
  const quoted = /^(["'])(\w+)\1$/.exec(text);
  const name = quoted ? quoted[2]! : text;
  const prefix = name.includes(".") ? name.slice(0, name.lastIndexOf(".") + 1) : "";
  const { own, builtIn } = decoyClasses(name, lang, bases, written);
  const custom = !isBuiltInClass(name, lang);
  // a qualified repository class (`errors.ParseError`) keeps its module; a bare one is a name the file binds
  const ownPicks = shuffled(own, rand).map((c) => (prefix && custom ? `${prefix}${c}` : c));
  const builtInPicks = shuffled(builtIn, rand);
  const pool = custom ? [...ownPicks, ...builtInPicks] : [...builtInPicks, ...ownPicks];
  return pool.slice(0, max).map((pick) => (quoted ? `${quoted[1]}${pick}${quoted[1]}` : pick));
}

/** A boolean literal's one other value (every language's spelling decoys read). */
const FLIP: Readonly<Record<string, string>> = { true: "false", false: "true", True: "False", False: "True" };

/**
 * Whether a decoy's value `changed` is the complement of the graded test's `original` in a
 * two-valued domain: a boolean flipped (`true` ↔ `false`). Such a decoy passes exactly when its
 * twin's assertion fails on an honest wrong answer (the only other value there is), so its pass
 * beside a failed twin is no evidence of a forged run or a guess at the graded copy. No other
 * decoy kind is a complement: numbers, strings and containment values are one of many other
 * values, and an exception decoy names another class (never "no exception"), so a wrong answer
 * that passes one of them chose that value. Pure.
 */
export function isComplement(original: string, changed: string): boolean {
  const o = original.trim();
  return Object.hasOwn(FLIP, o) && FLIP[o] === changed.trim();
}

/** Places of one literal weighed against the hidden files' text when a cost is given. */
const COSTED_PLACES = 12;

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
 * `bli` is a key the test made too, and a correct solution would pass that decoy. With `cost`
 * (decoys/context.ts), the values the rest of the hidden files tell least apart from the original.
 * Pure given `rand`.
 */
export function literalVariants(
  text: string,
  lang: Lang,
  kind: "equal" | "contains" | "class",
  rand: Rand,
  max: number,
  written: ReadonlySet<string> = new Set(),
  cost?: Cost,
  /** The classes the repository and the hidden files define (decoys/exception-classes.ts). */
  bases: ClassBases = new Map(),
): string[] {
  if (kind === "class") return otherClasses(text, lang, rand, max, written, bases);
  const one = (v: string) => (kind === "equal" ? [v] : []);
  const empty: Record<string, string> = { "[]": "[0]", "()": "(0,)", "{}": "{0}" };
  if (lang === "python" && empty[text]) return one(empty[text]);
  if (FLIP[text]) return one(FLIP[text]);
  if (/^\d/.test(text)) return kind === "equal" ? numberVariants(text, rand, max, cost) : [];
  // an equality holds for one value only: a written value is no risk there
  if (kind === "equal") return stringVariants(text, lang, rand, max, cost);
  const all = stringVariants(text, lang, rand, max * SPARE, cost);
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
