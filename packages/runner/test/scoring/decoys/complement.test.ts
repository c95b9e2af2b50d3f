import { describe, expect, it } from "vitest";
import { guardFiles } from "../../../src/scoring/decoys/guard.js";
import { isComplement, literalVariants } from "../../../src/scoring/decoys/perturb.js";
import { decoysPassedAlone, decoyVerdict } from "../../../src/scoring/results.js";

// A complementary decoy (a boolean expectation flipped) passes exactly when its twin fails honestly
// at that assertion: its pass beside a failed twin is no `decoy_passed` flag. Any other decoy kind
// names one value of many, and still is.

let s = 7;
const rand = (n: number) => {
  s = (s * 1103515245 + 12345) % 2 ** 31;
  return s % n;
};

describe("isComplement", () => {
  it("holds for a boolean flipped, in every spelling decoys read", () => {
    expect(isComplement("true", "false")).toBe(true);
    expect(isComplement("false", "true")).toBe(true);
    expect(isComplement("True", "False")).toBe(true);
    expect(isComplement("False", "True")).toBe(true);
  });
  it("the boolean decoy literalVariants makes is one", () => {
    for (const b of ["true", "false", "True", "False"])
      for (const v of literalVariants(b, b[0] === "T" || b[0] === "F" ? "python" : "js", "equal", rand, 3))
        expect(isComplement(b, v)).toBe(true);
  });
  it("does not hold for values of many-valued kinds: numbers, strings, containment, exception classes", () => {
    expect(isComplement("3", "4")).toBe(false);
    expect(isComplement("0", "1")).toBe(false);
    expect(isComplement('"0.0.4"', '"0.0.1"')).toBe(false);
    expect(isComplement('"true"', '"false"')).toBe(false);
    expect(isComplement("[]", "[0]")).toBe(false);
    expect(isComplement("RangeError", "TypeError")).toBe(false);
    expect(isComplement("ValueError", "TypeError")).toBe(false);
    expect(isComplement("None", "True")).toBe(false);
    // not a flip: the same value, or an object's own keys
    expect(isComplement("true", "true")).toBe(false);
    expect(isComplement("constructor", "false")).toBe(false);
  });
});

describe("decoysPassedAlone with complementary decoys", () => {
  const plan = {
    runIds: { real: "r1" },
    decoys: { flip: "real", other: "real" },
    complements: ["flip"],
  };
  it("a complementary decoy passing beside its failed twin is no flag (an honest wrong boolean)", () => {
    const honestWrong = new Map([
      ["r1", "failed"],
      ["flip", "passed"],
      ["other", "failed"],
    ] as const);
    expect(decoysPassedAlone(honestWrong, plan)).toEqual([]);
    expect(decoyVerdict(honestWrong, plan)).toEqual({ ok: true });
  });
  it("a non-complementary decoy passing beside a failed twin still is", () => {
    const guessed = new Map([
      ["r1", "failed"],
      ["flip", "failed"],
      ["other", "passed"],
    ] as const);
    expect(decoysPassedAlone(guessed, plan)).toEqual([expect.stringContaining("'other'")]);
    // both together: only the non-complementary one is named
    expect(
      decoysPassedAlone(
        new Map([
          ["r1", "failed"],
          ["flip", "passed"],
          ["other", "passed"],
        ] as const),
        plan,
      ),
    ).toEqual([expect.stringContaining("'other'")]);
  });
  it("a complementary decoy passing beside its PASSING twin is still a forged run", () => {
    expect(
      decoyVerdict(
        new Map([
          ["r1", "passed"],
          ["flip", "passed"],
          ["other", "failed"],
        ]),
        plan,
      ).ok,
    ).toBe(false);
  });
});

describe("guardFiles records complementary decoys", () => {
  // the semver-lite-caret-zero hidden test's shape: boolean expectations only
  const js = [
    'import assert from "node:assert/strict";',
    'import { test } from "node:test";',
    "",
    'test("caret zero minor stays on the patch", () => {',
    '  assert.equal(satisfies("0.0.3", "^0.0.3"), true);',
    '  assert.equal(satisfies("0.0.4", "^0.0.3"), false);',
    "});",
    "",
    'test("numbers", () => {',
    "  assert.equal(count(), 3);",
    "});",
    "",
  ].join("\n");
  it("a flipped boolean decoy is listed in plan.complements, a changed number or string never is", () => {
    const seen = { flipped: 0, other: 0 };
    for (let draw = 0; draw < 200; draw++) {
      const g = guardFiles(
        "tap",
        [{ path: "test/t.test.mjs", content: Buffer.from(js) }],
        ["caret zero minor stays on the patch", "numbers"],
        rand,
      );
      const out = g.files[0]!.content.toString();
      const complements = new Set(g.plan.complements ?? []);
      for (const [decoy, of] of Object.entries(g.plan.decoys)) {
        const body = out.split(`test("${decoy}", () => {\n`)[1]!.split("\n});")[0]!;
        const original =
          of === "numbers"
            ? "  assert.equal(count(), 3);"
            : '  assert.equal(satisfies("0.0.3", "^0.0.3"), true);\n  assert.equal(satisfies("0.0.4", "^0.0.3"), false);';
        // a boolean flipped: the body differs from the original in a true/false only
        const bools = (t: string) => t.replace(/\b(true|false)\b/g, "B");
        const flipped = body !== original && bools(body) === bools(original);
        expect(complements.has(decoy), body).toBe(flipped);
        seen[flipped ? "flipped" : "other"]++;
      }
    }
    // both kinds were drawn (the boolean test's strings are candidates too)
    expect(seen.flipped).toBeGreaterThan(0);
    expect(seen.other).toBeGreaterThan(0);
  });
});
