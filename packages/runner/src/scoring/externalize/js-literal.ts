import type { Tok } from "./js-tokens.js";

/**
 * Whether an expression of a trusted hidden test file is a literal, and its value: numbers,
 * strings, templates without `${…}`, true/false/null/NaN/Infinity, arrays and object literals of
 * those (plain keys), signs, arithmetic and parentheses. Only such tokens are let through, so
 * evaluating the text on the host calls nothing; anything else (a name, a call, a member, a
 * regular expression, `undefined`) is not a literal and answers why. Pure.
 */

const WORDS = new Set(["true", "false", "null", "NaN", "Infinity"]);
const OPS = new Set(["(", ")", "[", "]", "{", "}", ",", ":", "+", "-", "*", "/", "%"]);
/** Tokens after which an operand starts (and `(` or `[` opens one rather than calling or indexing). */
const OPENS_OPERAND = new Set(["(", "[", "{", ",", ":", "+", "-", "*", "/", "%"]);

/** Why token `i` of `toks` keeps the expression from being a literal, or undefined. */
function notLiteral(toks: readonly Tok[], i: number): string | undefined {
  const t = toks[i]!;
  const punct = (u: Tok | undefined) => (u?.kind === "punct" ? u.text : undefined);
  const prev = punct(toks[i - 1]);
  const next = punct(toks[i + 1]);
  switch (t.kind) {
    case "num":
    case "str":
      return undefined;
    case "tmpl":
      return t.text.includes("${") ? "a template with substitutions" : undefined;
    case "regex":
      return "a regular expression";
    case "name":
      if (WORDS.has(t.text)) return undefined;
      // an object key: `{ page: 3 }`
      if (next === ":" && (prev === "{" || prev === ",")) return undefined;
      return `the name ${t.text}`;
    case "punct":
      if (!OPS.has(t.text)) return `the operator ${t.text}`;
      // a call or a member (`"x"["constructor"](…)`): `(` and `[` only where an operand starts
      if ((t.text === "(" || t.text === "[") && i > 0 && !(prev && OPENS_OPERAND.has(prev)))
        return t.text === "(" ? "a call" : "a member access";
      return undefined;
  }
}

/** The literal value of `toks` (one expression), or why it is not one. */
export function literalValue(
  src: string,
  toks: readonly Tok[],
): { readonly value: unknown } | { readonly why: string } {
  if (!toks.length) return { why: "an empty expression" };
  for (let i = 0; i < toks.length; i++) {
    const why = notLiteral(toks, i);
    if (why) return { why: `its expected side is computed (${why})` };
  }
  const text = src.slice(toks[0]!.start, toks.at(-1)!.end);
  try {
    return { value: new Function(`"use strict"; return (${text});`)() };
  } catch (e) {
    return { why: `its expected side does not evaluate (${e instanceof Error ? e.message : String(e)})` };
  }
}
