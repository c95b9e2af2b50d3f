import type { Canon } from "./canon.js";

/**
 * The JavaScript half of externalized node assertions (externalize/node.ts), kept as text: it goes
 * into every rewritten hidden test file, renders what the test computed (canonically, type-tagged:
 * externalize/canon.ts) and appends it to the file `$FLAKEGYM_EMIT` names. The host renders each
 * expected value with this same text, so both sides agree. A number is a `float` tagged by its
 * JavaScript text (`-0`, `nan`, `inf` kept apart as Object.is does), a BigInt an `int`, a plain
 * object a `dict` of its own enumerable string keys, an array a `list`; anything else (undefined,
 * a function, a class instance, a Map) an `obj`, which equals nothing. No literal value of a test
 * is written here.
 */
export const JS_CANON = String.raw`
function __fgCanon(v, d) {
  d = d || 0;
  if (d > 64) return { t: "deep" };
  if (v === null) return { t: "none" };
  switch (typeof v) {
    case "boolean": return { t: "bool", v: v };
    case "bigint": return { t: "int", v: String(v) };
    case "string": return { t: "str", v: v };
    case "number":
      return { t: "float", v: v !== v ? "nan" : v === Infinity ? "inf" : v === -Infinity ? "-inf" : Object.is(v, -0) ? "-0" : String(v) };
  }
  if (typeof v === "object" && Array.isArray(v) && Object.getPrototypeOf(v) === Array.prototype) {
    const out = [];
    for (let i = 0; i < v.length; i++) out.push(i in v ? __fgCanon(v[i], d + 1) : { t: "obj", type: "hole", repr: "" });
    return { t: "list", v: out };
  }
  if (typeof v === "object") {
    const p = Object.getPrototypeOf(v);
    if (p === Object.prototype || p === null)
      return { t: "dict", v: Object.keys(v).map((k) => [{ t: "str", v: k }, __fgCanon(v[k], d + 1)]) };
  }
  let type = typeof v;
  try { type = v === undefined ? "undefined" : (v.constructor && v.constructor.name) || type; } catch (e) {}
  return { t: "obj", type: String(type), repr: "" };
}
`;

/**
 * The rest of the emitter: where emissions go, and the calls a rewritten assertion makes —
 * `__fgEmit(site, test, value)`, `__fgEmit2(site, test, value, expected)` (a pair: the test
 * computes its expected side) and `__fgThrows(site, test, fn, whole)` (what `fn` threw: the
 * error's name and its classes' names, with `<thrown>` for any thrown value, and its message, or
 * `String(error)` when `whole`, as a bare RegExp matcher reads it; or that nothing was thrown).
 */
const JS_EMIT = String.raw`
const __fgPath = (typeof process === "object" && process.env && process.env.FLAKEGYM_EMIT) || "";
function __fgLine(o) {
  if (__fgPath) __fgAppend(__fgPath, JSON.stringify(o) + "\n");
}
function __fgEmit(s, n, v) { __fgLine({ s: s, n: n, v: __fgCanon(v) }); }
function __fgEmit2(s, n, v, w) { __fgLine({ s: s, n: n, v: __fgCanon(v), w: __fgCanon(w) }); }
function __fgExc(e, whole) {
  const mro = [];
  let msg = "";
  try {
    if (e !== null && (typeof e === "object" || typeof e === "function")) {
      if (typeof e.name === "string") mro.push(e.name);
      for (let p = Object.getPrototypeOf(e); p; p = Object.getPrototypeOf(p)) {
        const c = Object.getOwnPropertyDescriptor(p, "constructor");
        if (c && typeof c.value === "function" && typeof c.value.name === "string") mro.push(c.value.name);
      }
    }
    msg = whole ? String(e) : String(e !== null && typeof e === "object" ? e.message : e);
  } catch (x) {}
  mro.push("<thrown>");
  return { t: "exc", mro: mro, msg: msg };
}
function __fgThrows(s, n, fn, whole) {
  let v = { t: "noexc" };
  try { fn(); } catch (e) { v = __fgExc(e, whole); }
  __fgLine({ s: s, n: n, v: v });
}
`;

/** The text put before a rewritten test file: the fs import its module kind takes, then the emitter. Pure. */
export function jsPrelude(module: "esm" | "cjs"): string {
  const fs =
    module === "esm"
      ? 'import { appendFileSync as __fgAppend } from "node:fs";'
      : 'const { appendFileSync: __fgAppend } = require("node:fs");';
  return `${fs}\n${JS_CANON}${JS_EMIT}`.replace(/\n+/g, "\n");
}

let hostCanon: ((v: unknown) => Canon) | undefined;

/** A value rendered on the host by the very text the sandbox renders with (JS_CANON). */
export function jsCanon(v: unknown): Canon {
  hostCanon ??= new Function(`${JS_CANON}\nreturn (v) => __fgCanon(v);`)() as (v: unknown) => Canon;
  return hostCanon(v);
}
