import type { ResultFormat } from "../../tasks/task-spec.js";
import { boolsIn, type Lexed, matchClose, numbersIn, type Span, splitTop, stringsIn } from "./scan.js";

/**
 * The places in a test's body where changing one literal must make a correct solution fail: the
 * expected side of an equality assertion, when that side is made of literals only (`assert x ==
 * "a"`, `assert_eq!(f(), vec!["a"])`, `assert.equal(f(), 3)`, `if got != "a" { t.Fatal… }`,
 * `want := []T{{"a", 2}}`, `CHECK_STR(f(), "a")`, `CHECK(n == 3)`), and containment checks of a
 * literal (`assert "x" in str(e)`, `!strings.Contains(err.Error(), "x")`), and the class an exception
 * test expects (`pytest.raises(ValueError)`, `assert.throws(f, RangeError)`), swapped for an
 * unrelated built-in class. Pure.
 */

export interface Site {
  /** Literals to choose from (one is changed per decoy). */
  readonly literals: readonly Span[];
  /**
   * `equal`: any other value fails; `contains`: the text must not occur (changed by replacing, not
   * cutting); `class`: the exception class a test expects (swapped for an unrelated built-in one).
   */
  readonly kind: "equal" | "contains" | "class";
  /**
   * An equality's whole comparison (both sides): where both sides are literals, changing one side
   * fails it, changing both may not (`1 == 1` → `3 == 3`).
   */
  readonly comparison?: Span;
}

/** Words an expression made of literals may contain, per language (constructors of literal data). */
const LITERAL_WORDS: Record<Lexed["lang"], RegExp> = {
  python: /\b(True|False|None)\b/g,
  rust: /\b(vec|Some|None|Ok|Err|true|false|to_string|to_owned|String|from|into|as|[iu](8|16|32|64|128|size)|f32|f64|str)\b/g,
  go: /\[\]\w+|map\[\w+\]\w+|\b(true|false|nil|[A-Z]\w*)\b/g,
  js: /\b(true|false|null|undefined)\b|[A-Za-z_$][\w$]*\s*:/g,
  c: /\b(true|false|NULL)\b/g,
};

const LITERAL_PUNCT: Record<Lexed["lang"], RegExp> = {
  python: /^[\s[\](){},:+-]*$/,
  rust: /^[\s[\](),&!:.-]*$/,
  go: /^[\s[\]{},:.&-]*$/,
  js: /^[\s[\](){},:-]*$/,
  c: /^[\s(),-]*$/,
};

/** The literals of `span` when it is an expression of literals only (else undefined). */
export function literalExpression(l: Lexed, span: Span): Span[] | undefined {
  if (span.end <= span.start) return undefined;
  const strings = stringsIn(l, span.start, span.end);
  const numbers = numbersIn(l, span.start, span.end);
  let rest = l.text.slice(span.start, span.end).split("");
  for (const s of [...strings, ...numbers]) for (let i = s.start; i < s.end; i++) rest[i - span.start] = " ";
  // comments count as blanks
  rest = rest.map((c, i) => (l.code[span.start + i] ? c : " "));
  const left = rest.join("").replace(LITERAL_WORDS[l.lang], " ");
  if (!LITERAL_PUNCT[l.lang].test(left)) return undefined;
  const lits = [...strings, ...numbers, ...boolsIn(l, span.start, span.end)].filter((s) => perturbable(l, s));
  // an empty container compared whole (`== []`) is itself the literal to change
  if (!lits.length && l.lang === "python" && /^(\[\]|\(\)|\{\})$/.test(l.text.slice(span.start, span.end)))
    return [span];
  return lits.length ? lits : undefined;
}

/** Literals whose value the perturbation understands (no f-strings, templates with `${`, byte chars). */
function perturbable(l: Lexed, s: Span): boolean {
  const t = l.text.slice(s.start, s.end);
  if (l.lang === "python" && /^[a-zA-Z]*[fF]/.test(t)) return false;
  if (l.lang === "js" && t.startsWith("`") && t.includes("${")) return false;
  if ((l.lang === "rust" || l.lang === "c" || l.lang === "go") && t.startsWith("'")) return false;
  return true;
}

/** Top-level call sites `name(` inside `body`: the span of their argument list. */
function calls(l: Lexed, body: Span, name: RegExp): Span[] {
  const out: Span[] = [];
  const g = new RegExp(name.source, "g");
  const text = l.text.slice(body.start, body.end);
  for (let m = g.exec(text); m; m = g.exec(text)) {
    const at = body.start + m.index;
    if (!l.code[at]) continue;
    const open = at + m[0].length - 1;
    const close = matchClose(l, open);
    if (close > 0 && close <= body.end) out.push({ start: open + 1, end: close });
  }
  return out;
}

const equalSite = (l: Lexed, ...operands: (Span | undefined)[]): Site[] => {
  const sides = operands.filter((o): o is Span => o !== undefined);
  const comparison = sides.length
    ? { start: Math.min(...sides.map((o) => o.start)), end: Math.max(...sides.map((o) => o.end)) }
    : undefined;
  return sides.flatMap((o) => {
    const lits = literalExpression(l, o);
    return lits ? [{ literals: lits, kind: "equal" as const, ...(comparison ? { comparison } : {}) }] : [];
  });
};

function pythonSites(l: Lexed, body: Span): Site[] {
  const out: Site[] = [];
  const re = /^[ \t]+assert\b/gm;
  const text = l.text.slice(body.start, body.end);
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const start = body.start + m.index + m[0].length;
    if (!l.code[start - 1]) continue;
    // the statement: to the end of its logical line (brackets may span lines)
    let end = start;
    let depth = 0;
    while (end < body.end) {
      const c = l.text[end]!;
      if (l.code[end]) {
        if ("([{".includes(c)) depth++;
        else if (")]}".includes(c)) depth--;
        else if (c === "\n" && depth <= 0) break;
      }
      end++;
    }
    const [expr] = splitTop(l, start, end, ",");
    if (!expr) continue;
    const eq = splitTop(l, expr.start, expr.end, "==");
    if (eq.length === 2) out.push(...equalSite(l, eq[0], eq[1]));
    const inn = splitTop(l, expr.start, expr.end, " in ");
    if (eq.length === 1 && inn.length === 2 && !/\bnot$/.test(l.text.slice(inn[0]!.start, inn[0]!.end))) {
      const lit = stringsIn(l, inn[0]!.start, inn[0]!.end);
      if (lit.length === 1 && lit[0]!.start === inn[0]!.start && lit[0]!.end === inn[0]!.end)
        out.push({ literals: lit, kind: "contains" });
    }
  }
  return out;
}

/**
 * Whether `name` (a dotted name in `pytest.raises(name)`) names a class by its own name: its last
 * part capitalised, and not an alias attribute like `pytest.skip.Exception` (it is
 * `_pytest.outcomes.Skipped`, a BaseException: a decoy expecting a built-in class instead lets
 * the skip through, and a skipped test's summary line names no test). Pure.
 */
export function isOwnClassName(name: string): boolean {
  const parts = name.split(".");
  const last = parts.at(-1)!;
  return /^[A-Z]/.test(last) && !(parts.length > 1 && last === "Exception" && parts[0] !== "builtins");
}

/** The first argument of `pytest.raises(X, …)` when it is a plain (dotted) class name. */
function pythonRaises(l: Lexed, body: Span): Site[] {
  return calls(l, body, /\bpytest\.raises\s*\(/).flatMap((args) => {
    const [first] = splitTop(l, args.start, args.end, ",");
    const name = first ? l.text.slice(first.start, first.end) : "";
    return first && /^[A-Za-z_][\w.]*$/.test(name) && isOwnClassName(name)
      ? [{ literals: [first], kind: "class" as const }]
      : [];
  });
}

/** `assert.throws(f, X)` / `assert.rejects(f, X)` with a built-in error class, or `{ name: "X" }`. */
function jsThrows(l: Lexed, body: Span): Site[] {
  return calls(l, body, /\bassert\.(?:throws|rejects)\s*\(/).flatMap((args) => {
    const second = splitTop(l, args.start, args.end, ",")[1];
    if (!second) return [];
    const text = l.text.slice(second.start, second.end);
    if (JS_ERRORS.includes(text)) return [{ literals: [second], kind: "class" as const }];
    const name = /\bname\s*:\s*/.exec(text);
    const lit = name && stringsIn(l, second.start + name.index + name[0].length, second.end)[0];
    return lit &&
      lit.start === second.start + name.index + name[0].length &&
      JS_ERRORS.includes(l.text.slice(lit.start + 1, lit.end - 1))
      ? [{ literals: [lit], kind: "class" as const }]
      : [];
  });
}

/** JavaScript's built-in error classes: none is a subclass of another (all extend Error). */
export const JS_ERRORS = [
  "TypeError",
  "RangeError",
  "SyntaxError",
  "ReferenceError",
  "URIError",
  "EvalError",
];

function jsSites(l: Lexed, body: Span): Site[] {
  const eq = calls(l, body, /\bassert\.(?:equal|strictEqual|deepEqual|deepStrictEqual)\s*\(/).flatMap(
    (args) => {
      const parts = splitTop(l, args.start, args.end, ",");
      return equalSite(l, parts[1]);
    },
  );
  return [...eq, ...jsThrows(l, body), ...jsExpectSites(l, body)];
}

/** Matchers of jest/vitest `expect(x).…` and chai `expect(x).to.…` that hold for one value only. */
const EXPECT_EQUAL = new Set([
  "toBe",
  "toEqual",
  "toStrictEqual",
  "toHaveLength",
  "equal",
  "equals",
  "eql",
  "lengthOf",
]);
/** Matchers that check a literal occurs (a substring, an element) or a thrown error's class or message. */
const EXPECT_CONTAINS = new Set(["toContain", "include", "includes", "contain", "contains"]);
const EXPECT_THROWS = new Set(["toThrow", "toThrowError", "throw", "throws"]);

/**
 * `expect(actual).<chain>.matcher(expected)` (jest, vitest, chai): the expected side of an equality,
 * a containment of a string literal, or the built-in class (or message text) a `toThrow` expects. A
 * chain with `not` is skipped: another value passes a negated check too. Pure.
 */
function jsExpectSites(l: Lexed, body: Span): Site[] {
  return calls(l, body, /\bexpect\s*\(/).flatMap((actual) => {
    const chain = /^(?:\s*\.\s*[A-Za-z_$][\w$]*)+\s*\(/.exec(l.text.slice(actual.end + 1, body.end));
    if (!chain) return [];
    const names: string[] = chain[0].match(/[A-Za-z_$][\w$]*/g) ?? [];
    const matcher = names.at(-1)!;
    const open = actual.end + chain[0].length;
    const close = matchClose(l, open);
    if (names.includes("not") || close < 0 || close > body.end || !l.code[open]) return [];
    const [first] = splitTop(l, open + 1, close, ",");
    if (!first) return [];
    if (EXPECT_EQUAL.has(matcher)) return equalSite(l, first);
    const text = l.text.slice(first.start, first.end);
    if (EXPECT_THROWS.has(matcher) && JS_ERRORS.includes(text))
      return [{ literals: [first], kind: "class" as const }];
    if (!EXPECT_CONTAINS.has(matcher) && !EXPECT_THROWS.has(matcher)) return [];
    const lit = stringsIn(l, first.start, first.end);
    return lit.length === 1 && lit[0]!.start === first.start && lit[0]!.end === first.end
      ? [{ literals: lit, kind: "contains" as const }]
      : [];
  });
}

function rustSites(l: Lexed, body: Span): Site[] {
  return calls(l, body, /\bassert_eq!\s*\(/).flatMap((args) => {
    const parts = splitTop(l, args.start, args.end, ",");
    return equalSite(l, parts[0], parts[1]);
  });
}

function cSites(l: Lexed, body: Span): Site[] {
  const str = calls(l, body, /\bCHECK_STR\s*\(/).flatMap((args) => {
    const parts = splitTop(l, args.start, args.end, ",");
    return equalSite(l, parts[1]);
  });
  const eq = calls(l, body, /\bCHECK\s*\(/).flatMap((args) => {
    const parts = splitTop(l, args.start, args.end, "==");
    return parts.length === 2 ? equalSite(l, parts[0], parts[1]) : [];
  });
  return [...str, ...eq];
}

/** Go: `if [init;] a != LIT || … { … t.Fatal… }`, `!strings.Contains(x, LIT)` disjuncts, `want := <literals>`. */
function goSites(l: Lexed, body: Span): Site[] {
  const out: Site[] = [];
  const text = l.text.slice(body.start, body.end);
  const ifs = /\bif\s/g;
  for (let m = ifs.exec(text); m; m = ifs.exec(text)) {
    const start = body.start + m.index + m[0].length;
    if (!l.code[start - 2]) continue;
    let open = start;
    let depth = 0;
    while (open < body.end) {
      const c = l.text[open]!;
      if (l.code[open]) {
        if (c === "{" && depth === 0) break;
        if ("([{".includes(c)) depth++;
        else if (")]}".includes(c)) depth--;
      }
      open++;
    }
    const close = matchClose(l, open);
    if (close < 0 || !/\bt\.(Fatal|Fatalf|Error|Errorf|Fail|FailNow)\b/.test(l.text.slice(open, close)))
      continue;
    const cond = splitTop(l, start, open, ";").at(-1)!;
    for (const d of splitTop(l, cond.start, cond.end, "||")) {
      const ne = splitTop(l, d.start, d.end, "!=");
      if (ne.length === 2) out.push(...equalSite(l, ne[0], ne[1]));
      const neg = /^!strings\.(Contains|HasPrefix|HasSuffix)\(/.exec(l.text.slice(d.start, d.end));
      if (neg) {
        const args = splitTop(l, d.start + neg[0].length, d.end - 1, ",");
        const lit = args[1] && stringsIn(l, args[1].start, args[1].end);
        if (lit?.length === 1 && lit[0]!.start === args[1]!.start && lit[0]!.end === args[1]!.end)
          out.push({ literals: lit, kind: "contains" });
      }
    }
  }
  const wants = /\b(?:want|expected)\w*\s*:?=\s*/g;
  for (let m = wants.exec(text); m; m = wants.exec(text)) {
    const start = body.start + m.index + m[0].length;
    if (!l.code[body.start + m.index]) continue;
    const nl = l.text.indexOf("\n", start);
    let end = nl < 0 ? body.end : nl;
    const brace = l.text.indexOf("{", start);
    if (brace >= 0 && brace < end) end = Math.max(end, matchClose(l, brace) + 1);
    out.push(...equalSite(l, { start, end }));
  }
  return out;
}

/** The assertion sites of one test body, for a file of `format`. Pure. */
export function assertionSites(format: ResultFormat, l: Lexed, body: Span): Site[] {
  return format === "pytest"
    ? [...pythonSites(l, body), ...pythonRaises(l, body)]
    : format === "tap"
      ? jsSites(l, body)
      : format === "libtest"
        ? rustSites(l, body)
        : format === "gotest"
          ? goSites(l, body)
          : cSites(l, body);
}
