import { describe, expect, it } from "vitest";
import { assertionSites } from "../../../src/scoring/decoys/assertions.js";
import { testBlocks } from "../../../src/scoring/decoys/blocks.js";

/** The literal texts and kinds of the sites in the first test of `text`. */
function sites(format: Parameters<typeof testBlocks>[0], text: string) {
  const { lexed, blocks } = testBlocks(format, text);
  return assertionSites(format, lexed, blocks[0]!.body).map((s) => ({
    kind: s.kind,
    literals: s.literals.map((l) => text.slice(l.start, l.end)),
  }));
}

describe("assertionSites", () => {
  it("python: == with a literal side, `literal in x`, pytest.raises(Class); not calls or `not in`", () => {
    const text = `def test_x():\n    assert f(1) == ["a", 2]\n    assert g() == h()\n    assert "cyc" in str(e)\n    assert "z" not in s\n    with pytest.raises(ValueError):\n        f(-1)\n    assert f(2) == [], "msg"\n`;
    expect(sites("pytest", text)).toEqual([
      { kind: "equal", literals: ['"a"', "2"] },
      { kind: "contains", literals: ['"cyc"'] },
      { kind: "equal", literals: ["[]"] },
      { kind: "class", literals: ["ValueError"] },
    ]);
  });

  it("python: pytest.raises of an alias attribute or a variable has no class site (pytest.skip.Exception, exception)", () => {
    const text = `def test_x(exception):\n    with pytest.raises(pytest.skip.Exception, match="^x"):\n        f()\n    with pytest.raises(exception):\n        g()\n    with pytest.raises(errors.ParseError):\n        h()\n`;
    expect(sites("pytest", text)).toEqual([{ kind: "class", literals: ["errors.ParseError"] }]);
  });

  it("js: assert.*Equal's expected argument and assert.throws' built-in class", () => {
    const text = `test("t", () => {\n  assert.deepEqual(p(), { items: [6], hasNext: false });\n  assert.equal(a(), b());\n  assert.throws(() => p(0), RangeError);\n  assert.throws(() => p(1), { name: "SyntaxError", message: /x/ });\n});\n`;
    expect(sites("tap", text)).toEqual([
      { kind: "equal", literals: ["6", "false"] },
      { kind: "class", literals: ["RangeError"] },
      { kind: "class", literals: ['"SyntaxError"'] },
    ]);
  });

  it("js: expect(x).matcher(expected) of jest, vitest and chai; never a negated chain or a computed side", () => {
    const text = [
      'test("t", () => {',
      '  expect(slugify("Route 66")).toBe("route-66");',
      '  expect(list()).toEqual(["a", 2]);',
      "  expect(f()).not.toBe(3);",
      "  expect(g()).toEqual(h());",
      '  expect(s()).toContain("needle");',
      "  expect(() => p(-1)).toThrow(RangeError);",
      '  expect(() => p(-2)).toThrow("too small");',
      "  expect(xs()).toHaveLength(4);",
      "  expect(c()).to.deep.equal({ a: 1 });",
      '  expect(c()).to.not.equal("x");',
      "});",
      "",
    ].join("\n");
    expect(sites("tap", text)).toEqual([
      { kind: "equal", literals: ['"route-66"'] },
      { kind: "equal", literals: ['"a"', "2"] },
      { kind: "contains", literals: ['"needle"'] },
      { kind: "class", literals: ["RangeError"] },
      { kind: "contains", literals: ['"too small"'] },
      { kind: "equal", literals: ["4"] },
      { kind: "equal", literals: ["1"] },
    ]);
  });

  it("rust assert_eq! with a literal side; go if-conditions that fail the test, want := literals, negated Contains; c checks", () => {
    expect(
      sites(
        "libtest",
        `#[test]\nfn t() {\n    assert_eq!(render(g, 2), vec!["  ", "██"]);\n    assert_eq!(x(), y());\n}\n`,
      ),
    ).toEqual([{ kind: "equal", literals: ['"  "', '"██"'] }]);
    const go = `func TestX(t *testing.T) {\n\tif got := F("a"); got != "b" || len(got) != 1 {\n\t\tt.Fatalf("x")\n\t}\n\tif err == nil || !strings.Contains(err.Error(), "line 2") {\n\t\tt.Fatal("y")\n\t}\n\twant := []Entry{{"a", 2}}\n\tif got != "c" {\n\t\tlog.Print("not a failure")\n\t}\n}\n`;
    expect(sites("gotest", go)).toEqual([
      { kind: "equal", literals: ['"b"'] },
      { kind: "equal", literals: ["1"] },
      { kind: "contains", literals: ['"line 2"'] },
      { kind: "equal", literals: ['"a"', "2"] },
    ]);
    expect(
      sites(
        "check-h",
        `static void a(void) {\n    CHECK_STR(enc("f"), "Zg==");\n    CHECK(n == 3);\n    CHECK(n > 3);\n}\nTEST_MAIN(T(a))\n`,
      ),
    ).toEqual([
      { kind: "equal", literals: ['"Zg=="'] },
      { kind: "equal", literals: ["3"] },
    ]);
  });
});
