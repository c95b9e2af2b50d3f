import type { RunConfig } from "../../src/run-format/schema.js";

/** A small run's config for the dummy deps: tasks a and b, two gold trajectories each; `over` replaces fields. */
export const dummyRunConfig = (over: Partial<RunConfig> = {}): RunConfig => ({
  tasks: ["a", "b"],
  groupSize: 2,
  policies: ["gold"],
  concurrency: 2,
  maxInfraRetries: 2,
  seed: 0,
  partialCredit: "none",
  weights: { tests: 1, build: 0, lint: 0, judge: 0 },
  testRepeat: 1,
  segments: "last",
  backend: "local",
  limits: { maxTurns: 5, timeoutMs: 60_000, testTimeoutMs: 60_000 },
  ...over,
});
