import { describe, expect, it } from "vitest";
import { externalizeGo } from "../../../src/scoring/externalize/go.js";
import { externalVerdict } from "../../../src/scoring/externalize/verdict.js";
import { GO_HELPER_FILE as COMMON, goSkipReason, goTestEmitting } from "./go-emit.js";

// Go's helpers that assert and locals that hold a row's expected field: go-humanize's
// `testList{{name, got, exp}, …}.validate(t)` (the comparison sits in a method of the table's type,
// in another file) and semver's `e := tc.expected; if a != e`. An oracle that reads the test files
// in its working directory (go test runs in the package's) wins both as written; rewritten, the
// expected values (and the row names that spell them) are no longer there and the host fails it.

const TESTS = `package calc

import "testing"

func TestSizes(t *testing.T) {
	sizeList{
		{"1 KiB", Size(1024), "1 KiB"},
		{"3 KiB", Size(3072), "3 KiB"},
	}.validate(t)
}

func TestAlias(t *testing.T) {
	tests := []struct {
		in   int
		want string
		orig string
	}{
		{7, "7 B", "7"},
		{4096, "4 KiB", "4096"},
	}
	for _, tc := range tests {
		a := Size(tc.in)
		e := tc.want
		if a != e {
			t.Errorf("Size(%d) = %q, want %q", tc.in, a, e)
		}
		a = Raw(tc.in)
		e = tc.orig
		if a != e {
			t.Errorf("Raw(%d) = %q, want %q", tc.in, a, e)
		}
	}
}

func TestNotGraded(t *testing.T) {
	sizeList{{"0 B", Size(0), "0 B"}}.validate(t)
}
`;

const RIGHT = `package calc

import "fmt"

func Size(n int) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d KiB", n/1024)
}

func Raw(n int) string { return fmt.Sprint(n) }
`;

// reads the expected value beside its input in the test files of its working directory
const ORACLE = `package calc

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
)

func look(n int, fn string) string {
	files, _ := filepath.Glob("*_test.go")
	pats := []string{fmt.Sprintf(\`%s\\(%d\\), "([^"]*)"\`, fn, n), fmt.Sprintf(\`\\{%d, "([^"]*)", "([^"]*)"\\}\`, n)}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for i, p := range pats {
			if m := regexp.MustCompile(p).FindSubmatch(b); m != nil {
				if i == 1 && fn == "Raw" {
					return string(m[2])
				}
				return string(m[1])
			}
		}
	}
	return "?"
}

func Size(n int) string { return look(n, "Size") }
func Raw(n int) string  { return look(n, "Raw") }
`;

const GRADED = ["TestSizes", "TestAlias"];
const noGo = goSkipReason();

const rewrite = () =>
  externalizeGo(
    [
      { path: "common_test.go", content: Buffer.from(COMMON) },
      { path: "calc_test.go", content: Buffer.from(TESTS) },
    ],
    GRADED,
  );

describe.skipIf(noGo !== undefined)("Go helpers that assert and locals holding a row's field", () => {
  it("keeps one site per row of each graded call and alias, the values on the host", async () => {
    const r = await rewrite();
    const text = r.files.map((f) => f.content.toString()).join("\n");
    for (const gone of ['"1 KiB"', '"3 KiB"', '"7 B"', '"4 KiB"', '"4096"']) expect(text).not.toContain(gone);
    // a call from a test nothing grades keeps its rows (and compares as written)
    expect(text).toContain('{"0 B", Size(0), "0 B"}');
    const of = (t: string) => r.sites.filter((s) => s.test === t).map((s) => [s.expected, s.count]);
    expect(of("TestSizes")).toEqual([
      [{ t: "str", v: "1 KiB" }, "one"],
      [{ t: "str", v: "3 KiB" }, "one"],
    ]);
    expect(of("TestAlias").map(([e]) => e)).toEqual(
      ["7 B", "4 KiB", "7", "4096"].map((v) => ({ t: "str", v })),
    );
    expect(r.tests.TestSizes?.sites).toBe(2);
  });

  it("run by go test: the right code holds outside the sandbox; an oracle reading the test files wins as written, fails rewritten", async () => {
    const r = await rewrite();
    const files = (impl: string, asWritten = false) => ({
      "calc.go": impl,
      ...Object.fromEntries(
        r.files.map((f) => [f.path, asWritten ? (f.path === "calc_test.go" ? TESTS : COMMON) : f.content]),
      ),
    });
    const right = await goTestEmitting(files(RIGHT));
    expect(externalVerdict(GRADED, r.sites, right.emitted)).toEqual(new Map());
    expect([...right.passed].sort()).toEqual([...GRADED, "TestNotGraded"].sort());
    const asWritten = await goTestEmitting(files(ORACLE, true));
    expect([...asWritten.passed].sort()).toEqual([...GRADED, "TestNotGraded"].sort());
    const oracle = await goTestEmitting(files(ORACLE));
    const v = externalVerdict(GRADED, r.sites, oracle.emitted);
    expect([...v.keys()].sort()).toEqual([...GRADED].sort());
    expect(v.get("TestSizes")).toMatch(/failed outside the sandbox/);
  }, 180_000);
});
