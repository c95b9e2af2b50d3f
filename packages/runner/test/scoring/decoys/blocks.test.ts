import { describe, expect, it } from "vitest";
import { jsNamedTests, registrations, testBlocks } from "../../../src/scoring/decoys/blocks.js";
import { lex } from "../../../src/scoring/decoys/scan.js";

const names = (format: Parameters<typeof testBlocks>[0], text: string) =>
  testBlocks(format, text).blocks.map((b) => [b.name, text.slice(b.nameSpan.start, b.nameSpan.end)]);

describe("testBlocks", () => {
  it("python: top-level test functions with their decorators; a string holding 'def test_' is not one", () => {
    const text = `import pytest\n\n@pytest.mark.slow\ndef test_a(cfg):\n    s = """\ndef test_fake():\n"""\n    assert s\n\n\ndef helper():\n    pass\n\n\nasync def test_b():\n    assert 1 == 1\n`;
    const { blocks } = testBlocks("pytest", text);
    expect(blocks.map((b) => b.name)).toEqual(["test_a", "test_b"]);
    expect(text.slice(blocks[0]!.whole.start, blocks[0]!.whole.end)).toBe(
      `@pytest.mark.slow\ndef test_a(cfg):\n    s = """\ndef test_fake():\n"""\n    assert s\n`,
    );
  });

  it("rust: #[test] functions (other attributes allowed), not helpers", () => {
    const text = `fn helper() {}\n\n#[test]\n#[should_panic]\nfn boom() {\n    let s = "}";\n    panic!("{s}");\n}\n`;
    const { blocks } = testBlocks("libtest", text);
    expect(blocks.map((b) => b.name)).toEqual(["boom"]);
    expect(text.slice(blocks[0]!.body.start, blocks[0]!.body.end)).toBe(
      `\n    let s = "}";\n    panic!("{s}");\n`,
    );
  });

  it("go: TestX(t *testing.T) functions; js: top-level test()/it() titles; c: registered functions only", () => {
    expect(names("gotest", "func TestA(t *testing.T) {\n}\nfunc helper(t *testing.T) {}\n")).toEqual([
      ["TestA", "TestA"],
    ]);
    expect(
      names("tap", `test("adds one", () => {\n  assert.equal(f(1), 2);\n});\nit('b', () => {});\n`),
    ).toEqual([
      ["adds one", "adds one"],
      ["b", "b"],
    ]);
    const c = "static void v(void) { CHECK(1); }\nstatic void unused(void) {}\nTEST_MAIN(T(v))\n";
    expect(names("check-h", c)).toEqual([["v", "v"]]);
    expect(testBlocks("check-h", c).blocks[0]!.nameSpan).toEqual({ start: 12, end: 13 });
    expect(registrations(testBlocks("check-h", c).lexed).map((r) => r.name)).toEqual(["v"]);
  });

  it("js: jest / vitest / mocha tests by full name (describe titles, then its own); unknown names left out", () => {
    const text = [
      'describe("slugify", () => {',
      '  it("joins words", () => {',
      '    expect(slugify("a b")).toBe("a-b");',
      "  });",
      '  context("with digits", function () {',
      '    test.only("keeps them", () => {});',
      "  });",
      '  describe.each([1, 2])("n %i", (n) => {',
      '    it("is hidden", () => {});',
      "  });",
      "  it(`templated $" + "{x}`, () => {});",
      "});",
      'it("top", () => {});',
      'foo.it("not a test", () => {});',
      "",
    ].join("\n");
    const tests = jsNamedTests(lex(text, "js"));
    expect(tests.map((t) => t.fullName)).toEqual([
      "slugify joins words",
      "slugify with digits keeps them",
      "top",
    ]);
    expect(text.slice(tests[0]!.body.start, tests[0]!.body.end)).toContain('toBe("a-b")');
  });
});
