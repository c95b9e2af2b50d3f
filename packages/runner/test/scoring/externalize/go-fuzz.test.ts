import { describe, expect, it } from "vitest";
import { externalizeGo } from "../../../src/scoring/externalize/go.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { goSkipReason, goTestEmitting } from "./go-emit.js";

// go-humanize's FuzzComma: the seed cases (FuzzComma/seed#i) are graded, and each checks a
// property computed from its seed. Nothing is secret; the comparison leaves the sandbox per seed
// (both sides emitted), so go test's own verdict no longer decides them.

const TESTS = `package calc

import (
	"strconv"
	"strings"
	"testing"
)

func FuzzDigits(f *testing.F) {
	f.Add(int64(5))
	f.Add(int64(1234))
	f.Add(int64(-1000))

	f.Fuzz(func(t *testing.T, v int64) {
		got := Digits(v)
		if strings.ReplaceAll(got, ",", "") != strconv.FormatInt(v, 10) {
			t.Fatalf("%d: got %q", v, got)
		}
	})
}
`;

const RIGHT = `package calc

import "strconv"

func Digits(v int64) string {
	s := strconv.FormatInt(v, 10)
	if len(s) > 3 && s[0] != '-' {
		return s[:len(s)-3] + "," + s[len(s)-3:]
	}
	return s
}
`;

// wrong for negative numbers
const WRONG = RIGHT.replace(
  "s := strconv.FormatInt(v, 10)",
  "s := strconv.FormatInt(v, 10)\n\tif v < 0 {\n\t\treturn s[1:]\n\t}",
);

const SEEDS = [0, 1, 2].map((i) => `FuzzDigits/seed#${i}`);
const GRADED = ["FuzzDigits", ...SEEDS];
const noGo = goSkipReason();

describe.skipIf(noGo !== undefined)("Go fuzz seeds checking a property", () => {
  it("emits both sides per graded seed: the host fails the seed a wrong implementation breaks, go test passes it", async () => {
    const r = await externalizeGo([{ path: "calc_test.go", content: Buffer.from(TESTS) }], GRADED);
    expect(r.sites.map((s) => [s.test, s.pair, s.expected, s.count])).toEqual(
      SEEDS.map((s) => [s, true, null, "one"]),
    );
    const rewritten = r.files[0]!.content;
    const right = await goTestEmitting({ "calc.go": RIGHT, "calc_test.go": rewritten });
    expect(externalVerdict(GRADED, r.sites, right.emitted)).toEqual(new Map());
    const asWritten = await goTestEmitting({ "calc.go": WRONG, "calc_test.go": TESTS });
    expect(asWritten.passed.has("FuzzDigits/seed#2")).toBe(false);
    const wrong = await goTestEmitting({ "calc.go": WRONG, "calc_test.go": rewritten });
    expect(wrong.passed.has("FuzzDigits/seed#2")).toBe(true);
    const v = externalVerdict(GRADED, r.sites, wrong.emitted);
    expect([...v.keys()]).toEqual(["FuzzDigits/seed#2"]);
  }, 180_000);
});
