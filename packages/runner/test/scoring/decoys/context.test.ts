import { describe, expect, it } from "vitest";
import { contextDistance, contextIndex } from "../../../src/scoring/decoys/context.js";
import { guardFiles } from "../../../src/scoring/decoys/guard.js";
import { choosePlace, literalVariants } from "../../../src/scoring/decoys/perturb.js";
import { forgerTellsReal } from "../../helpers/counting-forger.js";

let s = 3;
const rand = (n: number) => {
  s = (s * 1103515245 + 12345) % 2 ** 31;
  return s % n;
};

// bytesize-unit-boundary's hidden file, reduced: "1.0 KiB" is written again in the list below, and
// "1.0 GiB" in that list fits its neighbours ("iB", "1.0 ") — a counting forger told them from
// values the file writes nowhere (red-team attack py-real-value-from-context)
const BYTESIZE = `from bytesize import format_size


def test_exactly_one_kib():
    assert format_size(1024) == "1.0 KiB"


def test_exactly_one_mib():
    assert format_size(1024**2) == "1.0 MiB"


def test_exact_powers_step_up_every_unit():
    assert [format_size(1024**k) for k in range(1, 6)] == [
        "1.0 KiB",
        "1.0 MiB",
        "1.0 GiB",
        "1.0 TiB",
        "1.0 PiB",
    ]
`;

/** The distance function of the literal `lit` as written (first occurrence) in `texts[0]`. */
const distanceIn = (texts: string[], lit: string) => {
  const start = texts[0]!.indexOf(lit);
  return contextDistance(lit, contextIndex(texts), { start, end: start + lit.length });
};

describe("contextDistance", () => {
  it("is 0 for a value the rest of the files write exactly as often, whole and around the change", () => {
    const d = distanceIn([`z == "1.0 GiB" and x == "1.0 KiB" and y == ["1.0 KiB", "1.0 GiB"]`], '"1.0 GiB"');
    // beside it "1.0 GiB" is written once more, "1.0 KiB" twice: told apart
    expect(d('"1.0 KiB"')).toBeGreaterThan(0);
    // written nowhere: told apart from a value written once
    expect(d('"1.0 GiX"')).toBeGreaterThan(0);
    expect(distanceIn([`z == "1.0 GiB" and y == ["1.0 KiB", "1.0 GiB"]`], '"1.0 GiB"')('"1.0 KiB"')).toBe(0);
    // a value of a literal written nowhere, beside another written nowhere: nothing tells them apart
    expect(distanceIn(['f() == "abc" and "xyz"'], '"abc"')('"abd"')).toBe(0);
  });

  it("counts the whole value as a token, not inside a longer number", () => {
    expect(distanceIn(["x == 6, range(7), 16, 60"], "6")("8")).toBe(0);
    expect(distanceIn(["x == 7, range(7), 16, 60"], "7")("8")).toBeGreaterThan(0);
  });

  it("leaves the literal itself out and reads the other hidden files", () => {
    expect(distanceIn(['assert f() == "abc"'], '"abc"')('"abd"')).toBe(0);
    expect(distanceIn(['assert f() == "abc"', 'y = "abc"'], '"abc"')('"abd"')).toBeGreaterThan(0);
  });

  it("counts through the index exactly as a scan of the text would", () => {
    const text = "aaaa abab ab ba aab";
    const index = contextIndex([text, "ab"]);
    for (const piece of ["aa", "ab", "aab", "ba", "b a", "abab", "zz"]) {
      const scan = (t: string) => [...t.matchAll(new RegExp(`(?=${piece})`, "g"))].length;
      expect(index.count(piece, { start: 0, end: 0 }), piece).toBe(scan(`${text}\0ab`));
    }
    // an occurrence overlapping the literal itself does not count
    expect(index.count("abab", { start: 5, end: 9 })).toBe(0);
  });
});

describe("decoy values chosen by context", () => {
  it("a literal's decoys are the values nearest it in what the rest of the file writes", () => {
    const lit = '"1.0 KiB"';
    const cost = distanceIn([BYTESIZE], lit);
    for (let i = 0; i < 20; i++) {
      const vs = literalVariants(lit, "python", "equal", rand, 3, new Set(), cost);
      expect(vs.length).toBe(3);
      // the other units the list writes ("1.0 GiB", "1.0 TiB", "1.0 PiB"), never a value written nowhere
      for (const v of vs) expect(cost(v), v).toBe(0);
    }
  });

  it("choosePlace: the most values first, then the nearest; without a cost the first full set", () => {
    const places = [
      { place: "a", picked: ["x"], worst: 0 },
      { place: "b", picked: ["x", "y"], worst: 5 },
      { place: "c", picked: ["x", "y"], worst: 1 },
      { place: "d", picked: ["x", "y"], worst: 0 },
    ];
    expect(choosePlace(places, 2, true)?.place).toBe("d");
    expect(choosePlace(places.slice(0, 3), 2, true)?.place).toBe("c");
    expect(choosePlace(places, 2, false)?.place).toBe("b");
    expect(choosePlace([{ place: "e", picked: [], worst: 0 }], 2, true)).toBeUndefined();
  });

  it("a counting forger (the red-team attack's rule) tells no real test from its decoys (bytesize, 30 draws)", () => {
    const graded = [
      "tests/test_boundaries.py::test_exactly_one_kib",
      "tests/test_boundaries.py::test_exactly_one_mib",
      "tests/test_boundaries.py::test_exact_powers_step_up_every_unit",
    ];
    const file = { path: "tests/test_boundaries.py", content: Buffer.from(BYTESIZE) };
    let told = 0;
    for (let draw = 0; draw < 30; draw++) {
      const g = guardFiles("pytest", [file], graded, rand);
      expect(g.report.guarded).toEqual(graded);
      // every failing test must be told from its decoys for the forger to win
      if (graded.every((id) => forgerTellsReal("pytest", g.files, g.plan, id))) told++;
    }
    expect(told).toBe(0);
  });
});
