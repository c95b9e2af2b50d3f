import { describe, expect, it } from "vitest";
import { plainLine } from "../../src/progress/reporter.js";
import {
  policyOfTrajectory,
  sharedCause,
  shortIdList,
  validateLabels,
  withPolicyLabel,
} from "../../src/rollout/validate-lines.js";

describe("validate's progress lines name their policy", () => {
  const labels = validateLabels(["rewrite-conftest"]);
  it("by the trajectory's index: gold, empty, then each cheat", () => {
    expect(policyOfTrajectory("pytest-dev__pytest-10081-t0", labels)).toBe("gold");
    expect(policyOfTrajectory("pytest-dev__pytest-10081-t1", labels)).toBe("empty");
    expect(policyOfTrajectory("pytest-dev__pytest-10081-t2", labels)).toBe("cheat rewrite-conftest");
    expect(policyOfTrajectory("no-index", labels)).toBeUndefined();
  });
  it("on trajectory and retry lines; other events pass unchanged", () => {
    const e = { type: "trajectory", trajectoryId: "x-t1", taskId: "x", phase: "scoring" } as const;
    expect(plainLine(withPolicyLabel(e, labels))).toBe("trajectory x-t1 [empty]: scoring");
    const retry = { type: "retry", trajectoryId: "x-t2", attempt: 1, detail: "boot" } as const;
    expect(plainLine(withPolicyLabel(retry, labels))).toMatch(
      /^trajectory x-t2 \[cheat rewrite-conftest\]: infra failure/,
    );
    const note = { type: "note", message: "hello" } as const;
    expect(withPolicyLabel(note, labels)).toBe(note);
  });
});

describe("a shared failure is shown by its cause", () => {
  const collection = [
    "============================= test session starts ==============================",
    "collected 0 items / 1 error",
    "",
    "==================================== ERRORS ====================================",
    "_________________ ERROR collecting testing/test_mark.py _________________",
    "E   'minversion' requires pytest-2.0, actual pytest-0.1.dev1",
    "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!",
  ].join("\n");
  it("prints the first lines from the first error-looking line when two or more tests share one output", () => {
    const out = { a: collection, b: collection, c: "E  assert 1 == 2" };
    expect(sharedCause(["a", "b", "c"], out)).toEqual([
      "collected 0 items / 1 error",
      "==================================== ERRORS ====================================",
      "_________________ ERROR collecting testing/test_mark.py _________________",
      "E   'minversion' requires pytest-2.0, actual pytest-0.1.dev1",
      "!!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!",
    ]);
  });
  it("says nothing when each test failed its own way", () => {
    expect(sharedCause(["a", "b"], { a: "E x", b: "E y" })).toBeUndefined();
  });
  it("lists a few ids and counts the rest", () => {
    expect(shortIdList(["a", "b"])).toBe("a, b");
    expect(shortIdList(Array.from({ length: 64 }, (_, i) => `t${i}`))).toBe(
      "t0, t1, t2, t3, t4, … and 59 more",
    );
  });
});
