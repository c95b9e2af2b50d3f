import { describe, expect, it } from "vitest";
import { rowFormat, shapeOf, truthOnly } from "../guard-coverage.js";

describe("guard-coverage's reading of a row", () => {
  it("takes the row's own runner: sympy and django by repository, pytest by node ids, else go", () => {
    expect(rowFormat({ repo: "sympy/sympy", FAIL_TO_PASS: ["test_x"] })).toBe("sympy");
    expect(rowFormat({ repo: "django/django", FAIL_TO_PASS: ["test_x (a.B)"] })).toBe("django");
    expect(rowFormat({ repo: "psf/requests", FAIL_TO_PASS: '["tests/t.py::test_x"]' })).toBe("pytest");
    expect(rowFormat({ repo: "dustin/go-humanize", FAIL_TO_PASS: ["TestX"] })).toBe("gotest");
  });
  it("names an unguarded test's shape by the rewriter's reason", () => {
    expect(
      shapeOf("its id has a shape decoys do not handle; not externalized: no assertion found in its body"),
    ).toBe("no assertion found in its body");
    expect(shapeOf("sympy assertions are not externalized yet (decoys only)")).toBe(
      "sympy assertions are not externalized yet (decoys only)",
    );
  });
  it("counts apart the externalized tests whose every secret site is a truth bit", () => {
    const site = (test: string, kind: "truth" | "eq", pair = false) => ({
      site: "0123456789abcdef",
      test,
      kind,
      expected: { t: "bool" as const, v: true },
      opts: {},
      count: "one" as const,
      pair,
    });
    const sites = [
      site("f::a", "truth"),
      site("f::b", "truth"),
      site("f::b", "eq"),
      site("f::c", "truth"),
      site("f::c", "eq", true),
    ];
    expect(truthOnly(["f::a[x]", "f::b", "f::c"], sites)).toBe(2);
  });
});
