import { describe, expect, it } from "vitest";
import { parseArgs } from "../../src/cli/parse-args.js";
import { RolloutOptions, resolveRolloutOptions } from "../../src/rollout/config.js";
import { scoreOptionsOf } from "../../src/rollout/scoring-attempt.js";

const configOf = (argv: string[]) =>
  resolveRolloutOptions(parseArgs(RolloutOptions, ["--task", "a", ...argv]), {}, "w", "RUN").config;

describe("scoreOptionsOf", () => {
  it("scores with the run's terms, repeats and test timeout; tampering reverts by default", () => {
    const config = configOf([]);
    const o = scoreOptionsOf(config, "fix it", undefined, undefined);
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
    const o = scoreOptionsOf(judged, "fix it", bound, "k");
    expect(o.buildCmd).toBe("make");
    expect(o.lintCmd).toBe("make lint");
    expect(o.bound).toBe(bound);
    expect(o.judge).toEqual({
      baseUrl: "http://127.0.0.1:9/v1",
      model: "judge",
      timeoutMs: 120_000,
      apiKey: "k",
    });
    expect(scoreOptionsOf(judged, "fix it", undefined, undefined).judge).not.toHaveProperty("apiKey");
  });
});
