import { describe, expect, it } from "vitest";
import { allSkipped, VALIDATE_TEST_TIMEOUT_S, validateConfig } from "../../../src/cli/commands/validate.js";
import type { TaskVerdict } from "../../../src/rollout/validate.js";

const v = (taskId: string, verdict: TaskVerdict["verdict"]): TaskVerdict => ({
  taskId,
  verdict,
  gold: null,
  empty: null,
  cheatsHeld: null,
  cheatsRun: 0,
  flaky: [],
  reasons: [],
});

describe("allSkipped", () => {
  it("is true only when there were tasks and every one was skipped", () => {
    expect(allSkipped([v("a", "skip"), v("b", "skip")])).toBe(true);
    expect(allSkipped([v("a", "skip"), v("b", "pass")])).toBe(false);
    expect(allSkipped([])).toBe(false);
  });
});

describe("validateConfig: the hidden tests' time per run", () => {
  const base = { repeat: 1, tamperPenalty: "revert", backend: "local" } as const;
  it("is SWE-bench's harness default (1800 s) unless --test-timeout, which it takes in seconds", () => {
    expect(VALIDATE_TEST_TIMEOUT_S).toBe(1800);
    expect(validateConfig("t", [], base).limits.testTimeoutMs).toBe(1_800_000);
    expect(validateConfig("t", [], { ...base, testTimeout: 90 }).limits.testTimeoutMs).toBe(90_000);
  });
});
