import { describe, expect, it } from "vitest";
import type { HiddenTestVerdict } from "../../src/scoring/scorer.js";
import type { StepResult } from "../../src/scoring/script.js";
import {
  clipBytes,
  commandTestOutputs,
  excerptAbout,
  OTHER_TEST,
  suiteTestOutputs,
  TEST_OUTPUT_BYTES,
} from "../../src/scoring/test-output.js";
import { parsedScoring } from "../helpers/parsed-scoring.js";

const step = (output: string, exitCode = 1): StepResult => ({
  exitCode,
  output,
  outputBytes: output.length,
  seconds: 0.1,
});
const parsed = parsedScoring;
const v = (
  id: string,
  passed: boolean,
  kind: HiddenTestVerdict["kind"] = "fail_to_pass",
): HiddenTestVerdict => ({
  id,
  kind,
  passed,
  exitCode: passed ? 0 : 1,
  timedOut: false,
});

describe("clipBytes", () => {
  it("keeps short text and cuts long text to the byte budget, head and tail kept", () => {
    expect(clipBytes("short")).toBe("short");
    const long = `HEAD${"é".repeat(5000)}TAIL`;
    const c = clipBytes(long);
    expect(Buffer.byteLength(c)).toBeLessThanOrEqual(TEST_OUTPUT_BYTES);
    expect(c.startsWith("HEAD")).toBe(true);
    expect(c.endsWith("TAIL")).toBe(true);
    expect(c).toContain("[… cut …]");
    expect(c).not.toContain("\uFFFD");
  });
});

describe("commandTestOutputs", () => {
  it("keeps each failed test's own step output, from the first run it failed in", () => {
    const p = parsed({
      "test.0.0": step("ok", 0),
      "test.0.1": step("AssertionError: expected 2, got 3"),
      "test.1.0": step("Error: flaked on run 2"),
      "test.1.1": step("AssertionError: run 2"),
    });
    const out = commandTestOutputs(p, [
      [v("a", true), v("b", false)],
      [v("a", false), v("b", false)],
    ]);
    expect(out).toEqual({ b: "AssertionError: expected 2, got 3", a: "Error: flaked on run 2" });
  });

  it("says so when a failed test never reported, and leaves passed tests and eval_cmd out", () => {
    const out = commandTestOutputs(parsed({}), [[v("a", false), v("b", true), v("cmd", false, "eval_cmd")]]);
    expect(Object.keys(out)).toEqual(["a"]);
    expect(out.a).toMatch(/did not report/);
  });

  it("redacts gateway tokens in the output", () => {
    const token = `fg-${"A".repeat(32)}`;
    const out = commandTestOutputs(parsed({ "test.0.0": step(`failed with ${token}`) }), [[v("a", false)]]);
    expect(out.a).toBe("failed with [redacted]");
  });
});

describe("suiteTestOutputs", () => {
  const suiteOut = [
    "running 3 tests",
    "test tests::renamed_x9 ... FAILED",
    "thread 'tests::renamed_x9' panicked at src/lib.rs:10: assertion `left == right` failed",
    "  left: 2",
    " right: 3",
    "test tests::decoy_q7 ... FAILED",
    "thread 'tests::decoy_q7' panicked: assertion failed: expected 4",
    "test tests::other ... ok",
  ].join("\n");
  const decoys = {
    runIds: { "tests::graded": "tests::renamed_x9" },
    decoys: { "tests::decoy_q7": "tests::graded" },
  };

  it("gives a failed test the lines about it, under its graded name, and hides the decoy's name", () => {
    const out = suiteTestOutputs(
      parsed({ "test.0.0": step(suiteOut) }),
      [[v("tests::graded", false), v("tests::other", true, "pass_to_pass")]],
      decoys,
    );
    expect(Object.keys(out)).toEqual(["tests::graded"]);
    expect(out["tests::graded"]).toContain("thread 'tests::graded' panicked");
    expect(out["tests::graded"]).toContain("right: 3");
    expect(out["tests::graded"]).not.toContain("renamed_x9");
    expect(out["tests::graded"]).not.toContain("decoy_q7");
    expect(out["tests::graded"]).not.toContain("expected 4");
  });

  it("falls back to the output's tail with every reported name hidden when no line names the test", () => {
    const p = parsed({
      "test.0.0": step("error[E0425]: cannot find `Orientation`\ntests::decoy_q7 mentioned"),
    });
    const out = suiteTestOutputs(p, [[v("tests::graded", false)]], decoys);
    expect(out["tests::graded"]).toContain("cannot find `Orientation`");
    expect(out["tests::graded"]).toContain(OTHER_TEST);
    expect(out["tests::graded"]).not.toContain("decoy_q7");
  });
});

describe("excerptAbout", () => {
  it("stops at the next line naming another test", () => {
    const text = "a FAILED\nwhy a\nb FAILED\nwhy b";
    expect(excerptAbout(text, "a", ["b"])).toBe("a FAILED\nwhy a");
  });
});
