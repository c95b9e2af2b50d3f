import { argumentsOf, closing, type Tok } from "./js-tokens.js";

/**
 * Where the graded tests and the assert module sit in a node test file (externalize/node.ts), read
 * from its tokens: top-level `test(name, fn)` / `it(name, fn)` calls whose name is a plain string
 * and whose callback is a function written in place, and the names `node:assert` is bound to
 * (strict: `node:assert/strict`, or its `strict` member; legacy: `node:assert`, whose `equal` and
 * `deepEqual` are loose). Pure.
 */

export interface TestCall {
  readonly name: string;
  /** Token indexes of the callback body's `{` and `}`. */
  readonly open: number;
  readonly close: number;
}

export type AssertMode = "strict" | "legacy";

const STRICT = new Set(["node:assert/strict", "assert/strict"]);
const LEGACY = new Set(["node:assert", "assert"]);

/** A string token's value (a plain template too), or undefined. */
export function stringValue(t: Tok | undefined): string | undefined {
  if (!t) return undefined;
  if (t.kind === "tmpl" && !t.text.includes("${") && !t.text.includes("\\")) return t.text.slice(1, -1);
  if (t.kind !== "str") return undefined;
  try {
    return new Function(`"use strict"; return ${t.text};`)() as string;
  } catch {
    return undefined;
  }
}

const modeOf = (spec: string | undefined, strictMember: boolean): AssertMode | undefined =>
  spec === undefined
    ? undefined
    : STRICT.has(spec)
      ? "strict"
      : LEGACY.has(spec)
        ? strictMember
          ? "strict"
          : "legacy"
        : undefined;

/** `import X from "…"`, `import * as X from "…"`, `import { strict as X } from "…"`. */
function importBinding(toks: readonly Tok[], i: number): [string, AssertMode] | undefined {
  const t = (k: number) => toks[i + k]?.text;
  if (toks[i + 1]?.kind === "name" && t(2) === "from") {
    const m = modeOf(stringValue(toks[i + 3]), false);
    return m && [t(1)!, m];
  }
  if (t(1) === "*" && t(2) === "as" && t(4) === "from") {
    const m = modeOf(stringValue(toks[i + 5]), false);
    return m && [t(3)!, m];
  }
  if (t(1) !== "{") return undefined;
  const close = closing(toks, i + 1);
  if (close < 0 || toks[close + 1]?.text !== "from") return undefined;
  for (let k = i + 2; k < close; k++)
    if (toks[k]!.text === "strict" && toks[k + 1]?.text === "as" && toks[k + 2]?.kind === "name") {
      const m = modeOf(stringValue(toks[close + 2]), true);
      return m && [toks[k + 2]!.text, m];
    }
  return undefined;
}

/** `const X = require("…")` (`.strict` after it: strict). */
function requireBinding(toks: readonly Tok[], i: number): [string, AssertMode] | undefined {
  const t = (k: number) => toks[i + k]?.text;
  if (toks[i + 1]?.kind !== "name" || t(2) !== "=" || t(3) !== "require" || t(4) !== "(" || t(6) !== ")")
    return undefined;
  const m = modeOf(stringValue(toks[i + 5]), t(7) === "." && t(8) === "strict");
  return m && [t(1)!, m];
}

/** The names the file binds the assert module to, with their mode. Pure. */
export function assertBindings(toks: readonly Tok[]): Map<string, AssertMode> {
  const out = new Map<string, AssertMode>();
  for (let i = 0; i < toks.length; i++) {
    const w = toks[i]!.text;
    const b =
      w === "import"
        ? importBinding(toks, i)
        : ["const", "let", "var"].includes(w)
          ? requireBinding(toks, i)
          : undefined;
    if (b) out.set(b[0], b[1]);
  }
  return out;
}

/** The module kind a rewritten file's prelude must use, or undefined when it cannot be told. Pure. */
export function moduleKind(path: string, toks: readonly Tok[]): "esm" | "cjs" | undefined {
  if (path.endsWith(".mjs") || path.endsWith(".mts")) return "esm";
  if (path.endsWith(".cjs") || path.endsWith(".cts")) return "cjs";
  const esm = toks.some(
    (t, i) =>
      (t.text === "import" && toks[i + 1]?.text !== "(" && toks[i - 1]?.text !== ".") || t.text === "export",
  );
  const cjs = toks.some((t, i) => t.text === "require" && toks[i + 1]?.text === "(");
  return esm && !cjs ? "esm" : cjs && !esm ? "cjs" : undefined;
}

/** The `{` of a callback written in place at `j` (`async`? `(…) =>`, `x =>`, `function (…)`), or -1. */
function callbackBody(toks: readonly Tok[], j: number): number {
  if (toks[j]?.text === "async") j++;
  if (toks[j]?.text === "function") {
    j++;
    if (toks[j]?.kind === "name") j++;
    if (toks[j]?.text !== "(") return -1;
    j = closing(toks, j) + 1;
  } else if (toks[j]?.text === "(") {
    j = closing(toks, j) + 1;
    if (toks[j++]?.text !== "=>") return -1;
  } else if (toks[j]?.kind === "name" && toks[j + 1]?.text === "=>") j += 2;
  else return -1;
  return j > 0 && toks[j]?.text === "{" ? j : -1;
}

/** The file's top-level `test(name, fn)` and `it(name, fn)` calls. Pure. */
export function testCalls(toks: readonly Tok[]): TestCall[] {
  const out: TestCall[] = [];
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i]!;
    if (t.kind === "punct" && ["(", "[", "{"].includes(t.text)) {
      const c = closing(toks, i);
      if (c < 0) return out;
      if (
        !(t.text === "(" && ["test", "it"].includes(toks[i - 1]?.text ?? "") && toks[i - 2]?.text !== ".")
      ) {
        i = c;
        continue;
      }
      const args = argumentsOf(toks, i, c);
      const name =
        args.length === 2 && args[0]![1] - args[0]![0] === 1 ? stringValue(toks[args[0]![0]]) : undefined;
      const open = name === undefined ? -1 : callbackBody(toks, args[1]![0]);
      const close = open < 0 ? -1 : closing(toks, open);
      if (name !== undefined && close === args[1]![1] - 1) out.push({ name, open, close });
      i = c;
    }
  }
  return out;
}
