import { describe, expect, it } from "vitest";
import {
  EVAL_CMD_ID,
  formatOfPath,
  idsTwinFiles,
  twinFiles,
  unguardedEvalCmdNote,
  unguardedIdsNote,
} from "../../../src/scoring/decoys/twin.js";

let s = 7;
const rand = (n: number) => {
  s = (s * 1103515245 + 12345) % 2 ** 31;
  return s % n;
};
const file = (path: string, text: string) => ({ path, content: Buffer.from(text), executable: false });

describe("formatOfPath", () => {
  it("reads every hidden source file by its language, wherever it lies; test.sh and data are not read", () => {
    expect(formatOfPath(".harbor/tests/test_greet.py")).toBe("pytest");
    expect(formatOfPath(".harbor/tests/conftest.py")).toBe("pytest");
    expect(formatOfPath(".harbor/tests/files/test/ini.test.js")).toBe("tap");
    expect(formatOfPath(".harbor/tests/files/pkg/wordfreq_test.go")).toBe("gotest");
    // an exported Rust task's integration tests are not at the root's tests/
    expect(formatOfPath(".harbor/tests/files/tests/prerelease.rs")).toBe("libtest");
    expect(formatOfPath(".harbor/tests/files/tests/check_b64.c")).toBe("check-h");
    expect(formatOfPath(".harbor/tests/test.sh")).toBeUndefined();
    expect(formatOfPath(".harbor/tests/expected.json")).toBeUndefined();
    expect(formatOfPath(".harbor/tests/.py")).toBeUndefined();
  });
});

describe("twinFiles", () => {
  it("changes one literal of every assertion site, in test functions, methods and helpers alike", () => {
    const py = [
      "from greet import greet",
      "",
      "def test_a():",
      '    assert greet("Ada") == "Hello, Ada!"',
      "",
      "class TestB:",
      "    def test_b(self):",
      "        assert len(greet('x')) == 9",
      "        with pytest.raises(ValueError):",
      "            greet(None)",
      "",
    ].join("\n");
    const sh = "#!/bin/bash\npython3 -m pytest .harbor/tests\n";
    const t = twinFiles([file(".harbor/tests/test.sh", sh), file(".harbor/tests/test_greet.py", py)], rand);
    expect(t.files.map((f) => f.path)).toEqual([".harbor/tests/test.sh", ".harbor/tests/test_greet.py"]);
    expect(t.files[0]!.content.toString()).toBe(sh);
    const out = t.files[1]!.content.toString().split("\n");
    const src = py.split("\n");
    expect(t.sites).toBe(3);
    // the test's inputs stay; its expectations change, each to a value of the same look
    expect(out[3]).toMatch(/^ {4}assert greet\("Ada"\) == "[^"]+"$/);
    expect(out[3]).not.toBe(src[3]);
    expect(out[7]).toMatch(/^ {8}assert len\(greet\('x'\)\) == \d$/);
    expect(out[7]).not.toBe(src[7]);
    expect(out[8]).toMatch(/^ {8}with pytest\.raises\(\w+Error\):$/);
    expect(out[8]).not.toBe(src[8]);
    // nothing else moves: same names, same lines
    expect(out.filter((l, i) => l !== src[i])).toHaveLength(3);
    expect(t.report).toEqual({ guarded: [EVAL_CMD_ID], unguarded: [] });
  });

  it("reports the verdict unguarded when no hidden file has an assertion to change, saying why", () => {
    const none = twinFiles([file(".harbor/tests/test.sh", "[ -f hello.txt ]\n")], rand);
    expect(none.sites).toBe(0);
    expect(none.report.guarded).toEqual([]);
    expect(none.report.unguarded[0]!.id).toBe(EVAL_CMD_ID);
    expect(none.report.unguarded[0]!.reason).toMatch(/no hidden file is source the decoy code reads/);
    const computed = twinFiles(
      [file(".harbor/tests/test_x.py", "from m import f, g\n\ndef test_x():\n    assert f(1) == g(1)\n")],
      rand,
    );
    expect(computed.sites).toBe(0);
    expect(computed.report.unguarded[0]!.reason).toMatch(
      /^no assertion in the hidden test files \(.harbor\/tests\/test_x\.py\) has a literal expected value/,
    );
  });

  it("leaves a binary hidden file as it is", () => {
    const bin = { ...file(".harbor/tests/test_data.py", ""), content: Buffer.from([0, 1, 2, 0]) };
    expect(twinFiles([bin], rand).files[0]!.content).toEqual(bin.content);
  });
});

describe("unguardedEvalCmdNote", () => {
  it("names an eval_cmd task's hidden files that give the twin nothing to change, and is silent otherwise", () => {
    expect(unguardedEvalCmdNote({ ".harbor/tests/test.sh": "[ -f hello.txt ]\n" })).toMatch(
      /^its eval_cmd verdict has no decoy twin \(no hidden file is source the decoy code reads.*--allow-unguarded$/,
    );
    expect(
      unguardedEvalCmdNote({
        ".harbor/tests/test.sh": "python3 -m pytest\n",
        ".harbor/tests/test_a.py": 'def test_a():\n    assert f() == "a"\n',
      }),
    ).toBeUndefined();
  });
});

describe("idsTwinFiles", () => {
  const jest = [
    'const { slugify } = require("../src/slugify");',
    "",
    'describe("slugify", () => {',
    '  it("joins words", () => {',
    '    expect(slugify("Hello World")).toBe("hello-world");',
    "  });",
    '  it("keeps a trailing number (v2)", () => {',
    '    expect(slugify("Route 66")).toEqual("route-66");',
    "  });",
    '  it("is stable", () => {',
    '    expect(slugify(slugify("A b"))).toBe(slugify("A b"));',
    "  });",
    "});",
    "",
  ].join("\n");
  // ids as intake stores them for jest / vitest / mocha: regular expressions (test-runners.ts escapes them)
  const ids = [
    "slugify joins words",
    "slugify keeps a trailing number \\(v2\\)",
    "slugify is stable",
    "other test",
  ];

  it("guards each id whose command runs a test with a changed assertion; names why the others are not", () => {
    const t = idsTwinFiles([file("test/slugify.test.js", jest)], ids, rand);
    expect(t.report.guarded).toEqual(ids.slice(0, 2));
    expect(t.report.unguarded).toEqual([
      { id: "slugify is stable", reason: expect.stringMatching(/^its test has no assertion with a literal/) },
      {
        id: "other test",
        reason: "no test in the hidden test files (test/slugify.test.js) is named like it",
      },
    ]);
    expect(t.sites).toBe(2);
    const out = t.files[0]!.content.toString().split("\n");
    expect(out[4]).toMatch(/^ {4}expect\(slugify\("Hello World"\)\)\.toBe\("[a-z]+-[a-z]+"\);$/);
    expect(out[4]).not.toBe(jest.split("\n")[4]);
    expect(out[7]).not.toBe(jest.split("\n")[7]);
    // names, inputs and the rest stay
    expect(out.filter((l, i) => l !== jest.split("\n")[i])).toHaveLength(2);
  });

  it("an id's pattern runs every test whose full name it matches (jest's --testNamePattern)", () => {
    const t = idsTwinFiles(
      [file("test/slugify.test.js", jest)],
      ["slugify (joins|is stable)", "stable"],
      rand,
    );
    expect(t.report.guarded).toEqual(["slugify (joins|is stable)"]);
    expect(t.report.unguarded.map((u) => u.id)).toEqual(["stable"]);
    const bad = idsTwinFiles([file("test/slugify.test.js", jest)], ["slugify (joins"], rand);
    expect(bad.report.unguarded[0]!.reason).toMatch(/^is not a regular expression/);
  });

  it("no id guarded: no twin (the files as they are), every id reported", () => {
    const t = idsTwinFiles(
      [file("test/slugify.test.js", jest), file("README.md", "x")],
      ["slugify is stable"],
      rand,
    );
    expect(t.sites).toBe(0);
    expect(t.files.map((f) => f.content.toString())).toEqual([jest, "x"]);
    expect(t.report.guarded).toEqual([]);
  });

  it("other runners' ids name a test function by its last part", () => {
    const py = 'def test_a():\n    assert f() == "a"\n\ndef test_b():\n    assert f() == g()\n';
    const t = idsTwinFiles(
      [file("tests/test_m.py", py)],
      ["tests/test_m.py::test_a", "tests/test_m.py::test_b"],
      rand,
    );
    expect(t.report.guarded).toEqual(["tests/test_m.py::test_a"]);
    expect(t.report.unguarded.map((u) => u.id)).toEqual(["tests/test_m.py::test_b"]);
  });
});

describe("unguardedIdsNote", () => {
  const patch = (header: string, lines: string[]) =>
    `diff --git a/test/a.test.js b/test/a.test.js\n${header}@@ -0,0 +1,${lines.length} @@\n${lines.map((l) => `+${l}`).join("\n")}\n`;
  const body = [
    'describe("a", () => {',
    '  it("adds", () => { expect(add(1, 2)).toBe(3); });',
    '  it("is", () => { expect(f()).toBe(g()); });',
    "});",
  ];

  it("names the ids of a new test file no twin guards, and is silent when every id is guarded", () => {
    const whole = patch("new file mode 100644\n--- /dev/null\n+++ b/test/a.test.js\n", body);
    expect(unguardedIdsNote(whole, ["a adds"])).toBeUndefined();
    expect(unguardedIdsNote(whole, ["a adds", "a is"])).toMatch(
      /^1 of 2 graded id\(s\) without a decoy twin: a is \(its test has no assertion .*--allow-unguarded$/,
    );
  });

  it("a changed file shows only its hunks: the ids are 'not seen guarded', scoring's decoys decide", () => {
    const partial = patch("--- a/test/a.test.js\n+++ b/test/a.test.js\n", body.slice(1, 2));
    expect(unguardedIdsNote(partial, ["a adds"])).toMatch(
      /^1 of 1 graded id\(s\) not seen guarded in the tests patch's lines: .*score\.json decoys says which ids it guarded\)$/,
    );
  });
});

describe("twin complements (a flipped boolean)", () => {
  const js = [
    'describe("flags", () => {',
    '  it("only a boolean", () => {',
    "    expect(isOn(1)).toBe(true);",
    "  });",
    '  it("a boolean and a number", () => {',
    "    expect(pair(1)).toEqual([true, 42]);",
    "  });",
    "});",
    "",
  ].join("\n");

  it("a site with another literal than a boolean changes that one; a boolean-only test is reported complementOnly", () => {
    for (let seed = 0; seed < 20; seed++) {
      let r = seed;
      const draw = (n: number) => {
        r = (r * 1103515245 + 12345) % 2 ** 31;
        return r % n;
      };
      const t = idsTwinFiles(
        [file("test/f.test.js", js)],
        ["flags only a boolean", "flags a boolean and a number"],
        draw,
      );
      const out = t.files[0]!.content.toString().split("\n");
      expect(out[2]).toBe("    expect(isOn(1)).toBe(false);");
      // the number changed, never the boolean beside it
      expect(out[5]).toMatch(/\[true, (?!42\])\d+\]/);
      expect(t.report.complementOnly).toEqual(["flags only a boolean"]);
    }
  });

  it("an eval_cmd twin whose every change is a flipped boolean says so; one with any other change does not", () => {
    const onlyBool = twinFiles(
      [file("t.test.js", 'test("x", () => { expect(isOn(1)).toBe(true); });\n')],
      rand,
    );
    expect(onlyBool.report).toMatchObject({ guarded: [EVAL_CMD_ID], complementOnly: [EVAL_CMD_ID] });
    expect(twinFiles([file("test/f.test.js", js)], rand).report.complementOnly).toBeUndefined();
  });
});
