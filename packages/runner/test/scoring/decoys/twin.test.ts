import { describe, expect, it } from "vitest";
import {
  EVAL_CMD_ID,
  formatOfPath,
  twinFiles,
  unguardedEvalCmdNote,
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
