import type { Canon, ExternalSite } from "./canon.js";
import { type SiteEdit, unlessAllConditional } from "./edits.js";
import { jsCanon } from "./js-emitter.js";
import { literalValue } from "./js-literal.js";
import { argumentsOf, closing, type Tok } from "./js-tokens.js";
import { type AssertMode, stringValue, type TestCall } from "./node-tests.js";

/**
 * The assertions of one graded node test that leave its file (externalize/node.ts): in the
 * callback's body, `A.equal`/`strictEqual`/`deepEqual`/`deepStrictEqual(got, want[, message])`
 * (`equal` and `deepEqual` of the strict module only: the legacy ones are loose) and
 * `A.throws(fn[, matcher[, message]])`, where `A` is a name the file binds `node:assert` to. A
 * literal `want` leaves the file (an `eq`… `same` site, compared as Object.is / deepStrictEqual
 * compare on the host); a computed one stays and both sides are emitted (a pair). A matcher is an
 * error class's name, a RegExp, or `{ name, message }` of literals. Pure.
 */

const EQUALS = new Set(["equal", "strictEqual", "deepEqual", "deepStrictEqual"]);
/** Assertions with an expected side that are not externalized (said so per test). */
const OTHERS = new Set([
  "notEqual",
  "notStrictEqual",
  "notDeepEqual",
  "notDeepStrictEqual",
  "match",
  "doesNotMatch",
  "rejects",
  "doesNotThrow",
]);

type Args = readonly [number, number][];
type Built =
  | { readonly text: string; readonly site: Omit<ExternalSite, "site" | "test" | "count"> }
  | { readonly why: string };

const deepOnly = (c: Canon): boolean => c.t === "list" || c.t === "dict";
const renders = (c: Canon): boolean =>
  c.t === "list"
    ? c.v.every(renders)
    : c.t === "dict"
      ? c.v.every(([, v]) => renders(v))
      : c.t !== "obj" && c.t !== "deep";

/** Whether an optional message argument may be dropped (a string written in place). */
const plainMessage = (toks: readonly Tok[], a: [number, number] | undefined) =>
  !a || (a[1] - a[0] === 1 && stringValue(toks[a[0]]) !== undefined);

function equalSite(
  src: string,
  toks: readonly Tok[],
  method: string,
  args: Args,
  call: (w: string) => string,
): Built {
  if (args.length < 2 || args.length > 3 || !plainMessage(toks, args[2]))
    return { why: `assert.${method} with arguments other than (actual, expected, message)` };
  const text = (a: [number, number]) => src.slice(toks[a[0]]!.start, toks[a[1] - 1]!.end);
  const lit = literalValue(src, toks.slice(args[1]![0], args[1]![1]));
  if ("why" in lit)
    return {
      text: call(`__fgEmit2(%s, (${text(args[0]!)}), (${text(args[1]!)}))`),
      site: { kind: "same", expected: null, opts: {}, pair: true },
    };
  const want = jsCanon(lit.value);
  if (!renders(want))
    return { why: `assert.${method}'s expected value has no rendering (undefined, a hole)` };
  if (deepOnly(want) && !method.startsWith("deep"))
    return { why: `assert.${method} of a fresh object never holds (identity)` };
  return {
    text: call(`__fgEmit(%s, (${text(args[0]!)}))`),
    site: { kind: "same", expected: want, opts: {}, pair: false },
  };
}

/** A `{ name: "…", message: "…" | /…/ }` matcher's fields, or undefined. */
function objectMatcher(
  toks: readonly Tok[],
  from: number,
  to: number,
): { name?: string; message?: Tok } | undefined {
  if (toks[from]?.text !== "{" || closing(toks, from) !== to - 1) return undefined;
  const out: { name?: string; message?: Tok } = {};
  for (const [a, b] of argumentsOf(toks, from, to - 1)) {
    const key = toks[a]!;
    if (b - a !== 3 || toks[a + 1]!.text !== ":") return undefined;
    const v = toks[a + 2]!;
    if ((key.text === "name" || key.text === '"name"') && stringValue(v) !== undefined)
      out.name = stringValue(v)!;
    else if (key.text === "message" || key.text === '"message"') out.message = v;
    else return undefined;
  }
  return out;
}

/** A message matcher token as a pattern (a RegExp without flags, or a string matched whole), or undefined. */
function messagePattern(t: Tok): string | undefined {
  if (t.kind === "regex") return t.text.endsWith("/") && t.text.length > 2 ? t.text.slice(1, -1) : undefined;
  const s = stringValue(t);
  return s === undefined ? undefined : `^${s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}$`;
}

/** `throws`' matcher as the host compares it: class names, a message pattern, which message. */
function throwsExpected(toks: readonly Tok[], a: [number, number] | undefined) {
  const any = ["<thrown>"];
  if (!a) return { names: any, match: null, whole: false };
  const [from, to] = a;
  const one = toks[from]!;
  if (to - from === 1 && one.kind === "regex") {
    const p = messagePattern(one);
    return p === undefined ? undefined : { names: any, match: { t: "str" as const, v: p }, whole: true };
  }
  if (to - from === 1 && one.kind === "name" && /^[A-Z][\w$]*$/.test(one.text))
    return { names: [one.text], match: null, whole: false };
  const o = objectMatcher(toks, from, to);
  if (!o || (o.name === undefined && o.message === undefined)) return undefined;
  const p = o.message && messagePattern(o.message);
  if (o.message && p === undefined) return undefined;
  return {
    names: o.name === undefined ? any : [o.name],
    match: p === undefined ? null : { t: "str" as const, v: p },
    whole: false,
  };
}

function throwsSite(src: string, toks: readonly Tok[], args: Args, call: (w: string) => string): Built {
  if (args.length < 1 || args.length > 3 || !plainMessage(toks, args[2]))
    return { why: "assert.throws with arguments other than (fn, matcher, message)" };
  const want = throwsExpected(toks, args[1]);
  if (!want)
    return {
      why: "assert.throws' matcher is a function, a RegExp with flags, or an object with other fields",
    };
  const fn = src.slice(toks[args[0]![0]]!.start, toks[args[0]![1] - 1]!.end);
  return {
    text: call(`__fgThrows(%s, (${fn}), ${want.whole})`),
    site: { kind: "raises", expected: { names: want.names, match: want.match }, opts: {}, pair: false },
  };
}

/** Whether the assertion at token `j` (depth `depth` in the body) runs exactly once per test. */
function runsOnce(toks: readonly Tok[], j: number, depth: number, returns: boolean): boolean {
  return (
    !returns &&
    depth === 1 &&
    [";", "{", "}"].includes(toks[j - 1]?.text ?? "") &&
    toks[j - 1]?.kind === "punct"
  );
}

/** The assertion sites of graded test `test`, and why the others stayed. Pure. */
export function nodeSites(
  src: string,
  toks: readonly Tok[],
  test: TestCall,
  asserts: ReadonlyMap<string, AssertMode>,
  newId: () => string,
): { edits: SiteEdit[]; kept: string[] } {
  const edits: SiteEdit[] = [];
  const kept: string[] = [];
  const returns = toks.slice(test.open, test.close).some((t) => t.kind === "name" && t.text === "return");
  let depth = 0;
  for (let j = test.open; j < test.close; j++) {
    const t = toks[j]!;
    if (t.kind === "punct" && ["(", "[", "{"].includes(t.text)) depth++;
    if (t.kind === "punct" && [")", "]", "}"].includes(t.text)) depth--;
    const mode = t.kind === "name" && toks[j - 1]?.text !== "." ? asserts.get(t.text) : undefined;
    const method = toks[j + 2]?.text ?? "";
    if (!mode || toks[j + 1]?.text !== "." || toks[j + 3]?.text !== "(") continue;
    const close = closing(toks, j + 3);
    if (close < 0) break;
    const args = argumentsOf(toks, j + 3, close);
    const id = newId();
    const call = (w: string) => w.replace("%s", () => `${JSON.stringify(id)}, ${JSON.stringify(test.name)}`);
    const built: Built =
      method === "throws"
        ? throwsSite(src, toks, args, call)
        : EQUALS.has(method) && (mode === "strict" || method.toLowerCase().includes("strict"))
          ? equalSite(src, toks, method, args, call)
          : {
              why:
                OTHERS.has(method) || EQUALS.has(method)
                  ? `assert.${method} is not externalized (${mode})`
                  : "",
            };
    if ("why" in built) {
      if (built.why) kept.push(built.why);
      continue;
    }
    const count = runsOnce(toks, j, depth, returns) ? "one" : "any";
    edits.push({
      start: t.start,
      end: toks[close]!.end,
      text: built.text,
      site: { ...built.site, site: id, test: test.name, count },
    });
    j = close;
  }
  // a test may then emit nothing and still pass (its verdict would fail it): left to decoys
  return unlessAllConditional(edits, kept, "none of its assertions runs unconditionally");
}
