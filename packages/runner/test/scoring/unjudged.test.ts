import { describe, expect, it } from "vitest";
import type { HiddenTests } from "../../src/scoring/scorer.js";
import { readOrFailClosed, unjudgedReason, unjudgedVerdicts } from "../../src/scoring/unjudged.js";

const hidden: HiddenTests = {
  testFiles: ["tests/t.py"],
  commands: [],
  timeoutMs: 60_000,
  install: { kind: "patch", patch: "" },
  suite: {
    command: "python3 -m pytest -rA",
    results: "pytest",
    failToPass: ["tests/t.py::test_f"],
    passToPass: ["tests/t.py::test_p"],
    canary: { file: "tests/t.py", prepend: "", append: "", id: "{name}" },
  },
};
const overflow = (): string => {
  const f = (n: number): number => f(n + 1) + 1;
  return String(f(0));
};

describe("readOrFailClosed (what the host cannot read after the agent's code ran)", () => {
  it("a reading that throws after the agent's code ran is a verdict: every test failed, the reason kept", () => {
    const v = readOrFailClosed(true, "the emissions", overflow, (why) => why);
    expect(v).toMatch(
      /^the scorer could not read the emissions after the agent's code ran \(RangeError: Maximum call stack/,
    );
  });
  it("before any of the agent's code ran the throw is the machinery's and stays one", () => {
    expect(() => readOrFailClosed(false, "the emissions", overflow, (why) => why)).toThrow(RangeError);
  });
  it("a reading that does not throw is returned as it is", () => {
    expect(
      readOrFailClosed(
        true,
        "x",
        () => 7,
        () => 0,
      ),
    ).toBe(7);
  });
});

describe("unjudgedVerdicts", () => {
  it("fails every graded test of every run and names why", () => {
    const v = unjudgedVerdicts(hidden, 2, unjudgedReason("the emissions", new Error("boom")));
    expect(v.runs).toHaveLength(2);
    expect(v.runs.flat().map((t) => [t.id, t.kind, t.passed])).toEqual([
      ["tests/t.py::test_f", "fail_to_pass", false],
      ["tests/t.py::test_p", "pass_to_pass", false],
      ["tests/t.py::test_f", "fail_to_pass", false],
      ["tests/t.py::test_p", "pass_to_pass", false],
    ]);
    expect(v.tampering).toEqual([
      "the scorer could not read the emissions after the agent's code ran (Error: boom): fail closed",
    ]);
  });
});
