import { describe, expect, it } from "vitest";
import { allSkipped } from "../../../src/cli/commands/validate.js";
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
