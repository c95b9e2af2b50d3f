import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { meanReward, parseTestSummary, scoreOfSummary } from "../../src/contract/test-summary.js";

// captured here from real runs (a suite of 2 passing, 1 failing, 1 skipped test; pytest also 1 error)
const fixture = (name: string) => readFileSync(new URL(`fixtures/${name}`, import.meta.url), "utf8");

describe("parseTestSummary on real outputs", () => {
  it("pytest (full and -q)", () => {
    for (const f of ["pytest.txt", "pytest-q.txt"]) {
      expect(parseTestSummary(fixture(f))).toEqual({
        tool: "pytest",
        passed: 2,
        failed: 1,
        errors: 1,
        skipped: 1,
      });
    }
  });
  it("unittest (python -m unittest, 3.11): failures, errors, skips; an expected failure passes", () => {
    expect(parseTestSummary(fixture("unittest.txt"))).toEqual({
      tool: "unittest",
      passed: 3,
      failed: 1,
      errors: 1,
      skipped: 1,
    });
    expect(parseTestSummary(fixture("unittest-ok.txt"))).toEqual({
      tool: "unittest",
      passed: 1,
      failed: 0,
      errors: 0,
      skipped: 1,
    });
    const none = parseTestSummary(fixture("unittest-none.txt"))!;
    expect(none).toEqual({ tool: "unittest", passed: 0, failed: 0, errors: 0, skipped: 0 });
    expect(scoreOfSummary(none)).toBeUndefined();
    // Python 3.12+ says so when nothing ran; an unexpected success is a failure
    expect(parseTestSummary("Ran 0 tests in 0.000s\n\nNO TESTS RAN\n")).toMatchObject({ passed: 0 });
    expect(parseTestSummary("Ran 3 tests in 0.1s\n\nFAILED (unexpected successes=1)\n")).toMatchObject({
      passed: 2,
      failed: 1,
    });
  });
  it("node --test (TAP)", () => {
    expect(parseTestSummary(fixture("node-test.txt"))).toEqual({
      tool: "node-test",
      passed: 2,
      failed: 1,
      errors: 0,
      skipped: 1,
    });
  });
  it("cargo test", () => {
    expect(parseTestSummary(fixture("cargo-test.txt"))).toEqual({
      tool: "cargo-test",
      passed: 2,
      failed: 1,
      errors: 0,
      skipped: 1,
    });
  });
  it("go test -v", () => {
    expect(parseTestSummary(fixture("go-test.txt"))).toEqual({
      tool: "go-test",
      passed: 2,
      failed: 1,
      errors: 0,
      skipped: 1,
    });
  });
  it("vitest", () => {
    expect(parseTestSummary(fixture("vitest.txt"))).toEqual({
      tool: "vitest",
      passed: 2,
      failed: 1,
      errors: 0,
      skipped: 1,
    });
  });
});

describe("parseTestSummary on documented summary lines", () => {
  it("jest", () => {
    expect(parseTestSummary("Tests:       1 failed, 3 passed, 4 total\nTime: 1 s")).toMatchObject({
      tool: "jest",
      passed: 3,
      failed: 1,
    });
  });
  it("ctest", () => {
    expect(parseTestSummary("75% tests passed, 1 tests failed out of 4\n")).toMatchObject({
      tool: "ctest",
      passed: 3,
      failed: 1,
    });
  });
  it("go test without -v counts packages", () => {
    const out = "ok  \texample.com/a\t0.01s\nFAIL\texample.com/b\t0.02s\nFAIL\n";
    expect(parseTestSummary(out)).toMatchObject({ tool: "go-test", passed: 1, failed: 1 });
  });
  it("sums the results of several cargo test binaries", () => {
    const out =
      "test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\ntest result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out\n";
    expect(parseTestSummary(out)).toMatchObject({ passed: 4, failed: 2 });
  });
  it("nothing recognisable", () => {
    expect(parseTestSummary("hello\nworld")).toBeUndefined();
  });
});

describe("scores", () => {
  it("passed / (passed + failed + errors), skipped left out", () => {
    expect(scoreOfSummary({ passed: 2, failed: 1, errors: 1, skipped: 5 })).toBe(0.5);
    expect(scoreOfSummary({ passed: 0, failed: 0, errors: 0, skipped: 3 })).toBeUndefined();
  });
  it("mean reward fallback", () => {
    expect(meanReward([{ reward: 1 }, { reward: 0 }, { reward: 0.5 }])).toBe(0.5);
    expect(meanReward([])).toBeUndefined();
  });
});
