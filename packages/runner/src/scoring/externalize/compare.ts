import { match } from "ts-pattern";
import type { Canon, ExternalSite } from "./canon.js";
import { pyEqKey, sameItemsByKey } from "./eq-key.js";

/**
 * The host-side half of an externalized assertion: does what the test computed (its emission)
 * satisfy the expected value the sandbox never saw? Python's semantics for the values the renderer
 * knows (`1 == 1.0 == True`, a list is not a tuple, dicts and sets unordered, NaN equals nothing);
 * a value of an unknown type (`obj`) or one too deep to render satisfies nothing: the comparison
 * fails closed. Pure.
 */

type Num = { readonly re: number; readonly im: number; readonly int?: bigint };

const pyFloat = (s: string): number =>
  s === "inf" ? Infinity : s === "-inf" ? -Infinity : s === "nan" ? Number.NaN : Number(s);

/** A numeric value (bool, int, float, complex), else undefined. */
function numOf(c: Canon): Num | undefined {
  return match(c)
    .with({ t: "bool" }, (b) => ({ re: b.v ? 1 : 0, im: 0, int: b.v ? 1n : 0n }))
    .with({ t: "int" }, (i) => ({ re: Number(i.v), im: 0, int: BigInt(i.v) }))
    .with({ t: "float" }, (f) => ({ re: pyFloat(f.v), im: 0 }))
    .with({ t: "complex" }, (x) => ({ re: pyFloat(x.v[0]), im: pyFloat(x.v[1]) }))
    .otherwise(() => undefined);
}

/** Exact numeric equality (an int against an integral float compared exactly, as Python does). */
function numEqual(a: Num, b: Num): boolean {
  if (a.im !== b.im) return false;
  if (a.int !== undefined && b.int !== undefined) return a.int === b.int;
  const [i, f] = a.int !== undefined ? [a.int, b.re] : b.int !== undefined ? [b.int, a.re] : [undefined, 0];
  if (i !== undefined) return Number.isInteger(f) && BigInt(f) === i;
  return a.re === b.re;
}

const pairwise = (a: readonly Canon[], b: readonly Canon[], eq: (x: Canon, y: Canon) => boolean) =>
  a.length === b.length && a.every((x, i) => eq(x, b[i]!));

/** Python's `a == b` for rendered values. Pure. */
export function pyEqual(a: Canon, b: Canon): boolean {
  const na = numOf(a);
  const nb = numOf(b);
  if (na || nb) return na !== undefined && nb !== undefined && numEqual(na, nb);
  if (a.t === "str" && b.t === "str") return a.v === b.v;
  if (a.t === "bytes" && b.t === "bytes") return a.v === b.v;
  if (a.t === "none" && b.t === "none") return true;
  if ((a.t === "list" && b.t === "list") || (a.t === "tuple" && b.t === "tuple"))
    return pairwise(a.v, b.v, pyEqual);
  // unordered: by each item's key, a sort rather than every item against every other (eq-key.ts)
  if (a.t === "set" && b.t === "set") return sameItemsByKey(a.v, b.v);
  if (a.t === "dict" && b.t === "dict")
    return sameItemsByKey(
      a.v.map(([k, v]) => ({ t: "tuple", v: [k, v] }) as const),
      b.v.map(([k, v]) => ({ t: "tuple", v: [k, v] }) as const),
    );
  return false;
}

const optNum = (c: Canon | undefined): number | undefined => {
  const n = c && numOf(c);
  return n ? n.re : undefined;
};

/** pytest.approx: |got - want| <= max(rel * |want|, abs); abs alone drops rel (pytest's rules). Pure. */
export function approxEqual(got: Canon, want: Canon, opts: Readonly<Record<string, Canon>>): boolean {
  const g = numOf(got);
  const w = numOf(want);
  if (g && w && got.t !== "bool" && want.t !== "bool") {
    if (numEqual(g, w)) return true;
    const abs = optNum(opts.abs) ?? 1e-12;
    const rel = opts.rel === undefined && opts.abs !== undefined ? 0 : (optNum(opts.rel) ?? 1e-6);
    const d = Math.hypot(g.re - w.re, g.im - w.im);
    return Number.isFinite(d) && d <= Math.max(rel * Math.hypot(w.re, w.im), abs);
  }
  if ((got.t === "list" && want.t === "list") || (got.t === "tuple" && want.t === "tuple"))
    return pairwise(got.v, want.v, (x, y) => approxEqual(x, y, opts));
  if (got.t === "dict" && want.t === "dict") {
    // each expected key looked up by its key string (eq-key.ts), not against every emitted one
    const byKey = new Map(got.v.map(([k, v]) => [pyEqKey(k), v]));
    return (
      got.v.length === want.v.length &&
      want.v.every(([k, v]) => {
        const key = pyEqKey(k);
        const g = key === undefined ? undefined : byKey.get(key);
        return g !== undefined && approxEqual(g, v, opts);
      })
    );
  }
  return pyEqual(got, want);
}

/** unittest's assertAlmostEqual: equal, or within `delta`, or `round(a - b, places) == 0`. Pure. */
export function almostEqual(got: Canon, want: Canon, opts: Readonly<Record<string, Canon>>): boolean {
  if (pyEqual(got, want)) return true;
  const g = numOf(got);
  const w = numOf(want);
  if (!g || !w) return false;
  const d = Math.hypot(g.re - w.re, g.im - w.im);
  const delta = optNum(opts.delta);
  if (delta !== undefined) return d <= delta;
  const places = optNum(opts.places) ?? 7;
  return Number.isFinite(d) && Math.round(d * 10 ** places) === 0;
}

/** Python's `needle in container` for rendered values (undefined: not a container it knows). Pure. */
export function pyContains(container: Canon, needle: Canon): boolean | undefined {
  if (container.t === "str") return needle.t === "str" ? container.v.includes(needle.v) : undefined;
  if (container.t === "bytes")
    return needle.t === "bytes"
      ? container.v.includes(needle.v) && hexAligned(container.v, needle.v)
      : undefined;
  if (container.t === "list" || container.t === "tuple" || container.t === "set")
    return container.v.some((x) => pyEqual(x, needle));
  if (container.t === "dict") return container.v.some(([k]) => pyEqual(k, needle));
  return undefined;
}

/** Whether `needle` occurs in `hay` at a whole-byte offset (both hex). */
function hexAligned(hay: string, needle: string): boolean {
  for (let i = hay.indexOf(needle); i >= 0; i = hay.indexOf(needle, i + 1)) if (i % 2 === 0) return true;
  return false;
}

/** A Python `re` pattern as a JavaScript RegExp (named groups, `\A`, `\Z`), or undefined. Pure. */
export function pyRegExp(pattern: string): RegExp | undefined {
  const js = pattern
    .replaceAll("(?P<", "(?<")
    .replace(/\(\?P=(\w+)\)/g, "\\k<$1>")
    .replaceAll("\\A", "^")
    .replaceAll("\\Z", "$(?![\\s\\S])");
  try {
    return new RegExp(js);
  } catch {
    return undefined;
  }
}

/** The last part of a dotted name. */
const lastPart = (name: string) => name.slice(name.lastIndexOf(".") + 1);

/** `pytest.raises(X, match=…)`: an exception of a class named X (by its MRO) whose message matches. */
function raised(got: Canon, want: { names: readonly string[]; match: Canon | null }): true | string {
  if (got.t === "noexc") return "no exception was raised";
  if (got.t !== "exc") return `emitted ${got.t} where an exception was expected`;
  const names = new Set(got.mro.map(lastPart));
  if (!want.names.some((n) => names.has(lastPart(n)))) return `raised ${got.mro[0]}, not the expected class`;
  if (want.match === null) return true;
  if (want.match.t !== "str") return "the expected match pattern is not a string";
  const re = pyRegExp(want.match.v);
  if (!re) return "the expected match pattern does not compile as a JavaScript RegExp";
  return re.test(got.msg) ? true : "the exception's message does not match the expected pattern";
}

/**
 * Whether `got` (one emission) satisfies site `s`; true or why not. `emitted`: the expected side as
 * the test emitted it (pair sites; the `match` of a raises site). Pure.
 */
export function satisfies(s: ExternalSite, got: Canon, emitted?: Canon): true | string {
  if (s.pair && emitted === undefined) return "the test did not emit the expected side it computes";
  if (s.kind === "raises") {
    const want = s.expected as { names: string[]; match: Canon | null };
    return raised(got, s.pair ? { ...want, match: emitted! } : want);
  }
  const want = s.pair ? emitted! : (s.expected as Canon);
  // a pair whose sides only Python could compare: its verdict, as the assertion's was (pairs only)
  if (got.t === "inproc" || want.t === "inproc")
    return s.pair && got.t === "inproc" && want.t === "inproc" && got.ok === true
      ? true
      : `${s.kind} did not hold (compared in the test: values the rendering cannot carry)`;
  const ok = match(s.kind)
    .with("eq", () => pyEqual(got, want))
    .with("ne", () => got.t !== "obj" && got.t !== "deep" && got.t !== "unrenderable" && !pyEqual(got, want))
    .with("approx", () => approxEqual(got, want, s.opts))
    .with("almost", () => almostEqual(got, want, s.opts))
    .with("in", () => pyContains(got, want) === true)
    .with("notin", () => pyContains(got, want) === false)
    .with("is", () =>
      want.t === "none" ? got.t === "none" : want.t === "bool" && got.t === "bool" && got.v === want.v,
    )
    .with("isnot", () =>
      want.t === "none"
        ? got.t !== "none" && got.t !== "unrenderable"
        : got.t !== "bool" || (want.t === "bool" && got.v !== want.v),
    )
    .with("truth", () => want.t === "bool" && got.t === "bool" && got.v === want.v)
    .with("seqeq", () => seqEqual(got, want))
    .with("same", () => jsSame(got, want))
    .with("lines", () => linesHold(got, want, s.opts) === true)
    .with(
      "counteq",
      () =>
        seqOf(got) !== undefined && seqOf(want) !== undefined && sameItemsByKey(seqOf(got)!, seqOf(want)!),
    )
    .exhaustive();
  return ok ? true : `${s.kind} did not hold for the emitted ${got.t}`;
}

/**
 * node:assert's strictEqual (Object.is) and deepStrictEqual for values the JavaScript renderer
 * (externalize/js-emitter.ts) writes: the same tag and text (`-0`, `nan` as Object.is tells them),
 * arrays item by item, plain objects by the same keys in any order; anything it could not render
 * equals nothing. Pure.
 */
export function jsSame(a: Canon, b: Canon): boolean {
  if (a.t === "list" && b.t === "list") return pairwise(a.v, b.v, jsSame);
  if (a.t === "dict" && b.t === "dict") {
    const key = (k: Canon) => (k.t === "str" ? k.v : undefined);
    const bv = new Map(b.v.map(([k, v]) => [key(k), v]));
    return (
      a.v.length === b.v.length &&
      bv.size === b.v.length &&
      a.v.every(([k, v]) => key(k) !== undefined && bv.has(key(k)) && jsSame(v, bv.get(key(k))!))
    );
  }
  const scalar = ["none", "bool", "int", "float", "str"];
  return a.t === b.t && scalar.includes(a.t) && JSON.stringify(a) === JSON.stringify(b);
}

/**
 * Python's fnmatch pattern (`*`, `?`, `[seq]`, `[!seq]`; a `[` without its `]` is literal) as a
 * JavaScript RegExp matching a whole string, as fnmatch.translate does. Pure.
 */
export function fnmatchRegExp(pattern: string): RegExp {
  let out = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*") out += "[\\s\\S]*";
    else if (c === "?") out += "[\\s\\S]";
    else if (c === "[") {
      let j = i + 1;
      if (pattern[j] === "!") j++;
      if (pattern[j] === "]") j++;
      while (j < pattern.length && pattern[j] !== "]") j++;
      if (j >= pattern.length) out += "\\[";
      else {
        let body = pattern.slice(i + 1, j).replaceAll("\\", "\\\\");
        if (body.startsWith("!")) body = `^${body.slice(1)}`;
        else if (body.startsWith("^")) body = `\\${body}`;
        out += `[${body.replaceAll("[", "\\[").replaceAll("]", "\\]")}]`;
        i = j;
      }
    } else out += c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  }
  return new RegExp(`^${out}$`);
}

/**
 * One line against one pattern as pytester's LineMatcher does: equal (its `*_lines` checks only),
 * fnmatch, or re.match; undefined where the pattern does not compile.
 */
function lineMatches(line: string, pattern: string, how: string, equal = true): boolean | undefined {
  if (equal && line === pattern) return true;
  if (how === "fnmatch") return fnmatchRegExp(pattern).test(line);
  const re = pyRegExp(pattern);
  if (!re) return undefined;
  return new RegExp(re.source, "y").test(line);
}

/**
 * pytester's LineMatcher checks on the emitted lines: `fnmatch_lines` / `re_match_lines` (every
 * pattern matches a line, in order, each after the previous one's; `consecutive`: on the very
 * next line), `no_fnmatch_line` / `no_re_match_line` (no line matches the one pattern). Pure.
 */
export function linesHold(got: Canon, want: Canon, opts: Readonly<Record<string, Canon>>): true | string {
  if (got.t !== "list" || !got.v.every((l) => l.t === "str"))
    return `emitted ${got.t} where output lines were expected`;
  if (want.t !== "list" || !want.v.every((l) => l.t === "str"))
    return "the expected patterns are not strings";
  const lines = got.v.map((l) => (l as { v: string }).v);
  const pats = want.v.map((l) => (l as { v: string }).v);
  const how = opts.match?.t === "str" ? opts.match.v : "fnmatch";
  if (opts.absent?.t === "bool" && opts.absent.v)
    return lines.some((l) => lineMatches(l, pats[0]!, how, false) !== false)
      ? "a line matches the pattern that must not"
      : true;
  const consecutive = opts.consecutive?.t === "bool" && opts.consecutive.v;
  let at = 0;
  for (const [k, p] of pats.entries()) {
    let found = false;
    while (at < lines.length) {
      const m = lineMatches(lines[at++]!, p, how);
      if (m === undefined) return "a pattern does not compile as a JavaScript RegExp";
      if (m) {
        found = true;
        break;
      }
      if (consecutive && k > 0) return "the lines do not match the patterns consecutively";
    }
    if (!found) return "a pattern matched no line after the previous one's";
  }
  return true;
}

/** Items of a sequence or set (lists, tuples, sets; a string's characters), else undefined. */
function seqOf(c: Canon): readonly Canon[] | undefined {
  if (c.t === "list" || c.t === "tuple" || c.t === "set") return c.v;
  if (c.t === "str") return [...c.v].map((ch) => ({ t: "str", v: ch }) as const);
  return undefined;
}

/** assertSequenceEqual: any two sequences with pairwise-equal items (a list equals a tuple). */
function seqEqual(got: Canon, want: Canon): boolean {
  const g = got.t === "set" ? undefined : seqOf(got);
  const w = want.t === "set" ? undefined : seqOf(want);
  return g !== undefined && w !== undefined && pairwise(g, w, pyEqual);
}
