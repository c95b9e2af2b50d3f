import { describe, expect, it } from "vitest";
import { quickStart } from "./rollout-helpers.js";

// The main-job command itself runs in rollout.test.ts (its default-policy test runs it as written).

describe("README quick start", () => {
  it("has exactly two commands: the main job and the test suite", () => {
    const cmds = quickStart();
    expect(cmds).toHaveLength(2);
    expect(cmds[0]).toMatch(/^npm ci && npx flakegym /);
    expect(cmds[1]).toBe("npm test");
  });
});
