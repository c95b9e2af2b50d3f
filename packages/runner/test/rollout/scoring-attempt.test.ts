import { describe, expect, it } from "vitest";
import { parseArgs } from "../../src/cli/parse-args.js";
import { resolveRolloutOptions } from "../../src/rollout/config.js";
import { RolloutOptions } from "../../src/rollout/options.js";
import { scoreOptionsOf } from "../../src/rollout/scoring-attempt.js";

const configOf = (argv: string[]) =>
  resolveRolloutOptions(parseArgs(RolloutOptions, ["--task", "a", ...argv]), {}, "w", "RUN").config;
/** A catalog task (hidden tests installed from a patch) and a dataset row (none). */
const task = {
  prompt: "fix it",
  profile: "go",
  hidden: { testFiles: ["a_test.go"], install: { kind: "patch", patch: "" }, commands: [] },
} as unknown as Parameters<typeof scoreOptionsOf>[1];
const row = { prompt: "fix it", profile: "go", hidden: { testFiles: [], commands: [], timeoutMs: 1000 } };

describe("scoreOptionsOf", () => {
  it("scores with the run's terms, repeats and test timeout; tampering reverts by default", () => {
    const config = configOf([]);
    const o = scoreOptionsOf(config, task, undefined, undefined);
    expect(o).toEqual({
      partialCredit: config.partialCredit,
      weights: config.weights,
      repeat: config.testRepeat,
      tamperPenalty: "revert",
      termTimeoutMs: config.limits.testTimeoutMs,
      taskPrompt: "fix it",
    });
  });

  it("adds the build and lint commands, the bound hidden files and the judge with its key", () => {
    const config = configOf(["--build-cmd", "make", "--lint-cmd", "make lint"]);
    const judged = { ...config, judge: { baseUrl: "http://127.0.0.1:9/v1", model: "judge" } };
    const bound = { files: [], readOnly: true };
    const o = scoreOptionsOf(judged, task, bound, "k");
    expect(o.buildCmd).toBe("make");
    expect(o.lintCmd).toBe("make lint");
    expect(o.bound).toBe(bound);
    expect(o.judge).toEqual({
      baseUrl: "http://127.0.0.1:9/v1",
      model: "judge",
      timeoutMs: 120_000,
      apiKey: "k",
    });
    expect(scoreOptionsOf(judged, task, undefined, undefined).judge).not.toHaveProperty("apiKey");
  });

  it("gives a dataset row its profile's build and lint commands unless the flags name others", () => {
    const config = configOf([]);
    expect(scoreOptionsOf(config, row, undefined, undefined)).toMatchObject({
      buildCmd: "go build ./...",
      lintCmd: "go vet ./...",
    });
    // its default build lists what it compiled (scoring/build-reach.ts); a flagged one does not
    expect(scoreOptionsOf(config, row, undefined, undefined).reach).toBe("go");
    const flagged = scoreOptionsOf(configOf(["--build-cmd", "make"]), row, undefined, undefined);
    expect(flagged).toMatchObject({ buildCmd: "make", lintCmd: "go vet ./..." });
    expect(flagged.reach).toBeUndefined();
    expect(scoreOptionsOf(config, task, undefined, undefined).reach).toBeUndefined();
    // no lint command for a python row: the lint term is left out (weight 0), not reported as missing
    const dataset = { ...config, weights: { tests: 1, build: 1, lint: 1, judge: 0 } };
    const py = scoreOptionsOf(dataset, { ...row, profile: "python" }, undefined, undefined);
    expect(py.lintCmd).toBeUndefined();
    expect(py.weights).toMatchObject({ build: 1, lint: 0 });
    // a catalog task never gets the defaults
    expect(scoreOptionsOf(config, task, undefined, undefined)).not.toHaveProperty("buildCmd");
  });
});
