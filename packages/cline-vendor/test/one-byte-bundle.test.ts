import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import {
  escapeCommentText,
  escapeIdentifierText,
  escapeLiteralText,
  escapeWideCharacters,
  normalizeWideEscapes,
  wideOffsets,
} from "../src/one-byte-bundle.js";
import { compareMeaning } from "../src/one-byte-verify.js";

/** Rewrites a script and checks: one byte a character, same syntax tree, same value when run. */
function roundTrip(source: string) {
  const r = escapeWideCharacters(source);
  expect(r.oneByte).toBe(true);
  expect(wideOffsets(r.text)).toEqual([]);
  expect(compareMeaning(source, r.text).differences).toEqual([]);
  expect(runInNewContext(r.text)).toEqual(runInNewContext(source));
  return r;
}

describe("escapeWideCharacters", () => {
  it("escapes string literals, folding non-escape and line-continuation backslashes", () => {
    const r = roundTrip(`["it’s", 'wave 👋', "back\\’slash", "line\\\u2028continued", "keep \\\\’"]`);
    expect(r.counts.string).toBe(6); // code units: ’ ×3, 👋 (a pair), U+2028
    expect(r.text).toContain("it\\u2019s");
    expect(r.text).toContain("wave \\uD83D\\uDC4B");
    expect(r.text).toContain('"linecontinued"');
  });

  it("escapes identifiers (astral ones with braces) and private names", () => {
    const r = roundTrip(
      "const π = 3; const 𝑥 = 2; class A { #λ = 1; get() { return this.#λ; } } [π, 𝑥, new A().get()]",
    );
    expect(r.counts.identifier).toBe(8); // code units: π ×2, 𝑥 (a surrogate pair) ×2, λ ×2
    expect(r.text).toContain("\\u03C0");
    expect(r.text).toContain("\\u{1D465}");
  });

  it("escapes regular expressions with and without the u flag, identity escapes included", () => {
    roundTrip(
      String.raw`[/’|👋/.test("👋"), /^[👋]$/u.test("👋"), /^[👋]$/.test("👋"), /\’/.test("’"), /a/.source]`,
    );
    const r = escapeWideCharacters("/[👋]/u");
    expect(r.text).toBe("/[\\u{1F44B}]/u");
  });

  it("escapes the cooked text of untagged templates, expressions untouched", () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript source text under test
    const r = roundTrip("const n = 2; `it’s ${n + 1} 👋 ${'→'}`");
    expect(r.counts.template).toBe(3);
    expect(r.counts.string).toBe(1);
  });

  it("leaves tagged templates alone and says so: the file stays two-byte", () => {
    const r = escapeWideCharacters("const css = (s) => s.raw[0]; [String.raw`a’b`, css`→`, `plain ’`]");
    expect(r.oneByte).toBe(false);
    expect(r.counts["tagged-template"]).toBe(2);
    expect(r.counts.template).toBe(1);
    expect(r.taggedTags).toEqual(["String.raw", "css"]);
    expect(r.text).toContain("String.raw`a’b`");
  });

  it("rewrites comments in ASCII, keeping a line terminator one (automatic semicolons depend on it)", () => {
    const src = "#!/usr/bin/env node — ’\nlet a = 1 /*\u2028*/ let b = 2; // ’ “quoted” 👋\n/** → */ [a, b]";
    const r = roundTrip(src);
    expect(r.counts.comment).toBe(9);
    expect(r.text).toContain("u+2019");
  });

  it("turns Unicode white space between tokens into ASCII white space", () => {
    const r = roundTrip("let\u3000a\u00a0=\u20031;\u2028a\ufeff+ 1");
    expect(r.counts.whitespace).toBe(4);
  });

  it("returns a script without wide characters as it is", () => {
    const src = "const x = 'café';";
    expect(escapeWideCharacters(src)).toMatchObject({ text: src, oneByte: true });
  });
});

describe("the escapers", () => {
  it("literal text: one escape per code unit, braces only where asked", () => {
    expect(escapeLiteralText("'a’👋'", "string", false)).toBe("'a\\u2019\\uD83D\\uDC4B'");
    expect(escapeLiteralText("a👋", "regexp", true)).toBe("a\\u{1F44B}");
    expect(escapeLiteralText("\\\\’", "string", false)).toBe("\\\\\\u2019");
  });
  it("identifier and comment text", () => {
    expect(escapeIdentifierText("aπ𝑥")).toBe("a\\u03C0\\u{1D465}");
    expect(escapeCommentText("// it’s\u2029")).toBe("// itu+2019s\n");
  });
  it("normalizes the escapes it writes back, and only those", () => {
    expect(normalizeWideEscapes("\\u2019\\uD83D\\uDC4B\\u{1F44B}\\’\\u0041\\\\u2019")).toBe(
      "’👋👋’\\u0041\\\\u2019",
    );
  });
});

describe("compareMeaning", () => {
  it("finds a changed literal, name, cooked text and a tagged template's raw text", () => {
    expect(compareMeaning('"a’"', '"a?"').differences[0]?.what).toMatch(/literal "a’" became "a\?"/);
    expect(compareMeaning("let π", "let p").differences[0]?.what).toMatch(/Identifier.name/);
    expect(compareMeaning("`’`", "`?`").differences[0]?.what).toMatch(/template text/);
    expect(compareMeaning("f`\\u2019`", "f`’`").differences[0]?.what).toMatch(/raw text/);
    expect(compareMeaning("a + b", "a - b").differences[0]?.what).toMatch(/operator/);
    expect(compareMeaning("/’/", "/\\u2019/").differences).toEqual([]);
    expect(compareMeaning("/’/", "/\\u2018/").differences[0]?.what).toMatch(/regular expression/);
    expect(compareMeaning("a /* x */", "a").differences[0]?.what).toMatch(/1 comments became 0/);
  });
});
