import { describe, expect, it } from "vitest";
import { atifVerifierResult } from "../../src/export/formats/atif.js";
import { Score } from "../../src/run-format/score.js";
import { mergeRuns } from "../../src/scoring/scorer.js";
import { harborRewardsOf } from "../../src/tasks/harbor-rewards.js";

describe("a Harbor verifier's reward.json kept whole", () => {
  it("reads every key from the judge's last line; anything but an object of numbers is no record", () => {
    const out = 'noise\nharbor reward.json: {"correctness": 1, "performance": 0.5}\n';
    expect(harborRewardsOf(out)).toEqual({ correctness: 1, performance: 0.5 });
    expect(harborRewardsOf(`${out}harbor reward.json: {"correctness": 1}\n`)).toEqual({ correctness: 1 });
    expect(harborRewardsOf('harbor reward.json: {"a": "1"}')).toBeUndefined();
    expect(harborRewardsOf("harbor reward.json: [1]")).toBeUndefined();
    expect(harborRewardsOf("harbor reward.json: {}")).toBeUndefined();
    expect(harborRewardsOf("harbor reward.json: {oops")).toBeUndefined();
    expect(harborRewardsOf("reward.txt only")).toBeUndefined();
  });

  it("merged runs keep the failing run's rewards, and score.json's schema takes them", () => {
    const v = (passed: boolean, performance: number) => ({
      id: "eval_cmd",
      kind: "eval_cmd" as const,
      passed,
      exitCode: passed ? 0 : 1,
      timedOut: false,
      rewards: { correctness: 1, performance },
    });
    const m = mergeRuns([[v(true, 1)], [v(false, 0.5)]]);
    expect(m.evalCmd?.rewards).toEqual({ correctness: 1, performance: 0.5 });
    const evalCmd = { exitCode: 1, timedOut: false, rewards: m.evalCmd!.rewards! };
    expect(Score.shape.evalCmd.parse(evalCmd)).toEqual(evalCmd);
  });

  it("the ATIF export carries every key beside reward and the terms", () => {
    const r = {
      reward: 0,
      score: {
        terms: [{ name: "tests", value: 0 }],
        evalCmd: { exitCode: 1, timedOut: false, rewards: { correctness: 1, performance: 0.5, reward: 9 } },
      },
    } as unknown as Parameters<typeof atifVerifierResult>[0];
    expect(atifVerifierResult(r)).toEqual({
      rewards: { correctness: 1, performance: 0.5, reward: 0, tests: 0 },
    });
  });
});
