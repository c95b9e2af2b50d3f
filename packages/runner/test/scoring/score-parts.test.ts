import { describe, expect, it } from "vitest";
import { killedTampering, scoredTestFiles, scoreGate, scoringPlanOf } from "../../src/scoring/score-parts.js";
import type { HiddenTests, ScoreOptions } from "../../src/scoring/scorer.js";

const canary = { file: "tests/t.rs", prepend: "", append: "#[test] fn c(){}", id: "c" };
const suiteTask: HiddenTests = {
  testFiles: ["tests/t.rs"],
  install: { kind: "patch", patch: "diff --git a/tests/t.rs b/tests/t.rs\n" } as HiddenTests["install"] & {},
  commands: [],
  suite: {
    command: "cargo test",
    results: "libtest",
    failToPass: ["a"],
    passToPass: ["b"],
    canary: { file: "tests/t.rs", prepend: "", append: "#[test] fn {{name}}(){}" } as never,
  },
  timeoutMs: 60_000,
};
const opts = (more: Partial<ScoreOptions> = {}): ScoreOptions => ({
  partialCredit: "none",
  weights: { tests: 1, build: 0, lint: 0, judge: 0 },
  repeat: 0,
  termTimeoutMs: 5_000,
  taskPrompt: "fix it",
  ...more,
});
const bound = {
  files: [{ path: "tests/u.rs", content: Buffer.from("x"), executable: false }],
  canary,
  readOnly: true,
};

describe("scoredTestFiles", () => {
  it("adds the bound files the decoys rewrote, sorted and once each", () => {
    expect(scoredTestFiles({ ...suiteTask, testFiles: ["z", "tests/u.rs"] }, { bound })).toEqual([
      "tests/u.rs",
      "z",
    ]);
    expect(scoredTestFiles(suiteTask, {})).toEqual(["tests/t.rs"]);
  });
});

describe("scoringPlanOf", () => {
  it("a suite task installs its tests, writes the canary and runs at least once", () => {
    const p = scoringPlanOf(suiteTask, opts(), "d", ["tests/t.rs"], canary);
    expect(p.install).toEqual(suiteTask.install);
    expect(p.canary).toEqual({ file: "tests/t.rs", prepend: "", append: canary.append });
    // demoted (scoring/demote.ts): doctests of the agent's src/ never run; as written for a baseline
    expect(p.suite?.command).toBe("cargo test --tests");
    expect(scoringPlanOf(suiteTask, opts({ workspaceFirst: true }), "d", [], canary).suite?.command).toBe(
      "cargo test",
    );
    expect(p.hiddenFiles).toEqual(["tests/t.rs"]);
    expect(p.repeat).toBe(1);
    expect(p.maxOutputBytes).toBe(64 * 1024);
    expect(p.build).toBeUndefined();
  });

  it("bound hidden files are verified as files, and the canary is already in them", () => {
    const p = scoringPlanOf(suiteTask, opts({ bound }), "d", ["tests/t.rs", "tests/u.rs"], canary);
    expect(p.install).toEqual({ kind: "files", files: [{ path: "tests/u.rs", content: Buffer.from("x") }] });
    expect(p.canary).toBeUndefined();
  });

  it("a row without hidden tests runs build and lint only when weighted and given", () => {
    const row: HiddenTests = { testFiles: [], commands: [], timeoutMs: 1_000 };
    const p = scoringPlanOf(
      row,
      opts({ weights: { tests: 1, build: 1, lint: 0, judge: 0 }, buildCmd: "make", lintCmd: "lint" }),
      "d",
      [],
      undefined,
    );
    expect(p.install).toBeUndefined();
    expect(p.tests).toEqual([]);
    expect(p.hiddenFiles).toBeUndefined();
    expect(p.suite).toBeUndefined();
    expect(p.build).toEqual({ command: "make", timeoutMs: 5_000 });
    expect(p.lint).toBeUndefined();
  });
});

describe("killedTampering", () => {
  it("names the step and whether the code under test or what it left behind ended the script", () => {
    expect(killedTampering(undefined, 137)).toEqual([]);
    expect(killedTampering({ step: "test-0-0", during: true }, 137)[0]).toMatch(
      /killed while step 'test-0-0' ran \(exit 137\): the code under test/,
    );
    expect(killedTampering({ step: "build", during: false }, 9)[0]).toMatch(
      /killed after step 'build' ran \(exit 9\): a process the code under test left behind/,
    );
  });
});

describe("scoreGate", () => {
  const hit = { file: "src/a.py", line: 3, reason: "reads the tests", class: "test_reading" } as never;
  it("tampering with the tests wins over protected edits and the screen", () => {
    expect(
      scoreGate(["x", "y"], ["Makefile"], [hit], { tamperPenalty: "zero", suspiciousPenalty: "zero" }),
    ).toEqual({
      reason: "tests_tampered",
      detail: "x; y",
    });
  });
  it("then a protected edit under --tamper-penalty zero, then the screen under --suspicious-penalty zero", () => {
    expect(scoreGate([], ["Makefile"], [hit], { tamperPenalty: "zero" })?.reason).toBe("tampered");
    expect(scoreGate([], ["Makefile"], [hit], { suspiciousPenalty: "zero" })?.detail).toMatch(
      /flagged 1 line\(s\), first src\/a.py:3 \(reads the tests\)/,
    );
    expect(scoreGate([], ["Makefile"], [hit], {})).toBeUndefined();
    expect(scoreGate([], [], [], { suspiciousPenalty: "zero" })).toBeUndefined();
  });
  it("a decoy that passed alone comes after tampering and before protected edits", () => {
    expect(scoreGate([], ["Makefile"], [], { tamperPenalty: "zero" }, ["run 1: decoy d passed"])).toEqual({
      reason: "decoy_passed",
      detail: "run 1: decoy d passed",
    });
    expect(scoreGate(["x"], [], [], {}, ["run 1: decoy d passed"])?.reason).toBe("tests_tampered");
  });
});
