import { describe, expect, it } from "vitest";
import { externalizeGo } from "../../../src/scoring/externalize/go.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { goSkipReason, goTestEmitting } from "./go-emit.js";

// The host's Go rewriter on a test file with the shapes it takes (a direct `!=` against a
// constant, an `||` chain, a table test), then the rewritten file run for real by `go test`
// against a right and a wrong implementation: the constants are gone from the file, and the
// scorer's comparison of the emissions passes the right one only.

const TESTS = `package calc

import "testing"

func TestDirect(t *testing.T) {
	if got := Name(2); got != "two" {
		t.Fatalf("Name(2) = %q", got)
	}
}

func TestChain(t *testing.T) {
	if Name(1) != "one" || Half(9) != 4.5 || Count("a b c") != 3 {
		t.Fatal("chain")
	}
}

func TestTable(t *testing.T) {
	cases := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"a", 1},
		{"a b c d", 4},
		{in: "   "},
	}
	for _, tc := range cases {
		if got := Count(tc.in); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestComputed(t *testing.T) {
	if Count("a b") != len("ab") {
		t.Fatal("computed")
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		in  string
		err bool
	}{
		{"a", false},
		{"", true},
	}
	for _, tc := range tests {
		_, err := Parse(tc.in)
		if tc.err && err == nil {
			t.Fatalf("expected an error for %q", tc.in)
		} else if !tc.err && err != nil {
			t.Fatalf("error for %q: %v", tc.in, err)
		}
	}
}

func TestTableReadElsewhere(t *testing.T) {
	for _, tc := range []struct{ in string; n int }{{"a", 1}} {
		if Count(tc.in) != tc.n || tc.n < 0 {
			t.Fatal("x")
		}
	}
}
`;

const RIGHT = `package calc

import (
	"errors"
	"strings"
)

func Name(n int) string { return map[int]string{1: "one", 2: "two"}[n] }
func Half(n int) float64 { return float64(n) / 2 }
func Count(s string) int { return len(strings.Fields(s)) }
func Parse(s string) (int, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	return len(s), nil
}
`;

const WRONG = RIGHT.replace("return len(strings.Fields(s))", "return len(strings.Fields(s)) % 4").replace(
  'if s == "" {',
  'if s == "a" {',
);

const noGo = goSkipReason();

const GRADED = [
  "TestDirect",
  "TestChain",
  "TestTable",
  "TestErrors",
  "TestComputed",
  "TestTableReadElsewhere",
];

const runWith = (impl: string, rewritten: string) =>
  goTestEmitting({ "calc.go": impl, "calc_test.go": rewritten });

describe.skipIf(noGo !== undefined)("the host's Go rewriter (scoring/externalize/go.ts)", () => {
  it("takes direct, chained and table comparisons against constants; leaves computed and read-elsewhere ones", async () => {
    const r = await externalizeGo([{ path: "calc_test.go", content: Buffer.from(TESTS) }], GRADED);
    const text = r.files[0]!.content.toString();
    for (const gone of ['"two"', '"one"', '"a b c d", 4', "!= 3"]) expect(text).not.toContain(gone);
    // a float compared where its type is unknown stays (float32 and float64 render apart)
    expect(text).toContain("Half(9) != 4.5");
    expect(text).toContain('{"a b c d", *new(int)}');
    const per = (t: string) => r.sites.filter((s) => s.test === t);
    expect(per("TestDirect").map((s) => [s.expected, s.count])).toEqual([[{ t: "str", v: "two" }, "one"]]);
    expect(per("TestChain").map((s) => s.expected)).toEqual([
      { t: "str", v: "one" },
      { t: "int", v: "3" },
    ]);
    expect(r.tests.TestChain!.kept.join()).toMatch(/float/);
    expect(per("TestTable").map((s) => s.expected)).toEqual(
      ["0", "1", "4", "0"].map((v) => ({ t: "int", v })),
    );
    // `tc.err && err == nil` / `!tc.err && err != nil`: an emission of err != nil per row
    expect(per("TestErrors").map((s) => s.expected)).toEqual([
      { t: "bool", v: false },
      { t: "bool", v: true },
    ]);
    expect(text).toContain('{"", *new(bool)}');
    expect(text).toMatch(/} else if false {/);
    expect(per("TestComputed")).toEqual([]);
    expect(per("TestTableReadElsewhere")).toEqual([]);
    expect(r.sites.every((s) => !s.pair && /^[0-9a-f]{16}$/.test(s.site))).toBe(true);
  });

  it("the rewritten file runs: the right implementation holds outside the sandbox, a wrong one fails there though go test passes it", async () => {
    const r = await externalizeGo([{ path: "calc_test.go", content: Buffer.from(TESTS) }], GRADED);
    const rewritten = r.files[0]!.content.toString();
    const right = await runWith(RIGHT, rewritten);
    expect(externalVerdict(GRADED, r.sites, right.emitted)).toEqual(new Map());
    expect([...right.passed].sort()).toEqual([...GRADED].sort());
    const wrong = await runWith(WRONG, rewritten);
    // the tables' comparisons left the file: go test passes them, the host does not
    expect(wrong.passed.has("TestTable") && wrong.passed.has("TestErrors")).toBe(true);
    const v = externalVerdict(GRADED, r.sites, wrong.emitted);
    expect([...v.keys()]).toEqual(["TestTable", "TestErrors"]);
    expect(v.get("TestTable")).toMatch(/failed outside the sandbox/);
  }, 180_000);

  it("a forged emission line for a site no graded test has makes every externalized test fail", async () => {
    const r = await externalizeGo([{ path: "calc_test.go", content: Buffer.from(TESTS) }], GRADED);
    const v = externalVerdict(
      GRADED,
      r.sites,
      '{"s":"0000000000000000","n":"TestDirect","v":{"t":"str","v":"two"}}\n',
    );
    expect([...v.keys()].sort()).toEqual(["TestChain", "TestDirect", "TestErrors", "TestTable"]);
  });
});
