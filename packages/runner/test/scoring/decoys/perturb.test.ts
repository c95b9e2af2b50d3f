import { describe, expect, it } from "vitest";
import {
  lengthVariants,
  literalVariants,
  perturbLiteral,
  type Rand,
} from "../../../src/scoring/decoys/perturb.js";

/** A deterministic rand cycling through `seq`. */
const seq = (...xs: number[]): Rand => {
  let i = 0;
  return (n) => xs[i++ % xs.length]! % n;
};

describe("perturbLiteral", () => {
  it("changes every kind of literal to another value of the same kind, many draws over", () => {
    const cases: [string, Parameters<typeof perturbLiteral>[1], RegExp][] = [
      ['"1.0 KiB"', "python", /^"[^"]*"$/],
      ["r'raw\\n'", "python", /^r'.*'$/],
      ['r#"ab"#', "rust", /^r#".*"#$/],
      ["`x\\ny`", "go", /^`.*`$/],
      ["'it'", "js", /^'.*'$/],
      ['"\\x00\\x01"', "c", /^".*"$/],
      ["5_400_000", "js", /^\d[\d_]*$/],
      ["4.0", "rust", /^\d+\.0$/],
      ["255u8", "rust", /^\d+u8$/],
      ['""', "python", /^".+"$/],
    ];
    for (const [text, lang, shape] of cases) {
      for (let seed = 0; seed < 50; seed++) {
        let s = seed * 7919;
        const rand: Rand = (n) => {
          s = (s * 1103515245 + 12345) % 2 ** 31;
          return s % n;
        };
        const out = perturbLiteral(text, lang, "equal", rand);
        expect(out, text).toBeDefined();
        expect(out).not.toBe(text);
        expect(out).toMatch(shape);
      }
    }
  });

  it("keeps integers within the smallest integer type that held them (a compiled test still compiles)", () => {
    for (let d = 0; d < 10; d++) {
      const out = perturbLiteral("200u8", "rust", "equal", seq(0, d, 1, 2, 3));
      if (out) expect(Number.parseInt(out, 10)).toBeLessThanOrEqual(255);
    }
  });

  it("contains checks only replace or double a character; booleans flip; classes swap for an unrelated built-in", () => {
    for (let i = 0; i < 20; i++) {
      const out = perturbLiteral('"cycl"', "python", "contains", seq(i, i + 1, i + 2))!;
      expect(out.length).toBeGreaterThanOrEqual('"cycl"'.length);
    }
    expect(perturbLiteral("true", "js", "equal", seq(0))).toBe("false");
    expect(perturbLiteral("False", "python", "equal", seq(0))).toBe("True");
    expect(perturbLiteral("ValueError", "python", "class", seq(0))).toMatch(
      /^(TypeError|ZeroDivisionError|AttributeError|IndexError|RuntimeError)$/,
    );
    expect(perturbLiteral('"SyntaxError"', "js", "class", seq(0))).toMatch(
      /^"(TypeError|RangeError|ReferenceError|URIError|EvalError)"$/,
    );
    expect(perturbLiteral("MyError", "rust", "class", seq(0))).toBeUndefined();
  });

  it("gives several values of one literal that differ from it, and from each other, at one place (none sits in the middle)", () => {
    let x = 7;
    const rand: Rand = (n) => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return x % n;
    };
    for (const [text, lang] of [
      ['"1.0 KiB"', "python"],
      ["5_400_000", "js"],
      ['"hello world"', "go"],
    ] as const) {
      const vs = literalVariants(text, lang, "equal", rand, 3);
      expect(vs.length).toBe(3);
      const all = [text, ...vs];
      expect(new Set(all).size).toBe(4);
      const diffAt = (a: string, b: string) => [...a].flatMap((c, i) => (c === b[i] ? [] : [i]));
      const places = new Set(all.flatMap((a) => all.filter((b) => b !== a).flatMap((b) => diffAt(a, b))));
      expect(places.size, `${text}: ${vs.join(" ")}`).toBe(1);
    }
    // C: nothing goes right after a greedy \x escape
    for (let i = 0; i < 30; i++)
      for (const v of literalVariants('"\\x1bc"', "c", "equal", rand, 3))
        expect(v).not.toMatch(/^"\\x1b[0-9a-fA-F]/);
  });
});

describe("lengthVariants (a run of one character with nothing to swap in)", () => {
  it("puts the real length at every rank among its decoys, about evenly, never repeating a length", () => {
    const ranks = [0, 0, 0, 0];
    let s = 5;
    const rand = (n: number) => {
      s = (s * 1103515245 + 12345) % 2 ** 31;
      return Math.floor((s / 2 ** 31) * n); // the high bits: an LCG's low bits cycle
    };
    for (let d = 0; d < 400; d++) {
      const v = lengthVariants(["█", "█", "█", "█"], 0, rand, 3);
      const lengths = v.map((x) => x.length);
      expect(new Set(lengths).size).toBe(3);
      expect(lengths).not.toContain(4);
      expect(Math.min(...lengths)).toBeGreaterThan(0);
      ranks[lengths.filter((l) => l < 4).length]!++;
    }
    for (const r of ranks) expect(r).toBeGreaterThan(60);
  });

  it("a one-character run has only longer decoys (nothing shorter exists)", () => {
    expect(
      lengthVariants(["▄"], 0, () => 0, 3)
        .map((v) => v.length)
        .sort(),
    ).toEqual([2, 3, 4]);
  });
});
