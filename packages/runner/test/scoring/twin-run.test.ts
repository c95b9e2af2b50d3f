import { describe, expect, it } from "vitest";
import type { PreparedHidden } from "../../src/scoring/read-only.js";
import type { Score } from "../../src/scoring/score.js";
import type { ScoreOptions } from "../../src/scoring/scorer.js";
import {
  createDummyScoringRun,
  scoreGuarded,
  TWIN_REPEAT,
  twinGate,
  twinOptions,
  withTwin,
} from "../../src/scoring/twin-run.js";

const score = (tests: number, extra: Partial<Score> = {}): Score => ({
  reward: tests,
  terms: [{ name: "tests", weight: 1, value: tests, detail: `eval_cmd exited ${tests ? 0 : 1}` }],
  evalCmd: { exitCode: tests ? 0 : 1, timedOut: false },
  flaky: [],
  touchedTestFiles: [],
  diffBytes: 10,
  durationMs: 100,
  ...extra,
});
const hidden = (tag: string): PreparedHidden => ({
  bound: { files: [{ path: "t/test_x.py", content: Buffer.from(tag), executable: false }], readOnly: false },
});
const options: ScoreOptions = {
  partialCredit: "none",
  weights: { tests: 0.8, build: 0, lint: 0, judge: 0.2 },
  judge: { baseUrl: "http://127.0.0.1:9/v1", model: "m", timeoutMs: 1000 },
  repeat: 1,
  termTimeoutMs: 1000,
  taskPrompt: "p",
};
const isTwin = (h: PreparedHidden | undefined) => h?.bound.files[0]?.content.toString() === "twin";

describe("twinGate / withTwin", () => {
  it("a pass whose twin passed too is not believed; a failing twin keeps the pass", () => {
    expect(twinGate(score(1), score(0))).toBeUndefined();
    const forged = withTwin(score(1), score(1));
    expect(forged.reward).toBe(0);
    expect(forged.gate?.reason).toBe("tests_tampered");
    expect(forged.gate?.detail).toMatch(/decoy twin run .* passed too \(eval_cmd exited 0\)/);
    expect(forged.twin).toEqual({ passed: true, exitCode: 0, timedOut: false });
    const honest = withTwin(score(1), score(0));
    expect(honest.reward).toBe(1);
    expect(honest.gate).toBeUndefined();
    expect(honest.twin?.passed).toBe(false);
    expect(honest.durationMs).toBe(200);
    // the scoring's CPU is both runs', known only when both are
    expect(withTwin(score(1, { cpuS: 0.3 }), score(0, { cpuS: 0.4 })).cpuS).toBeCloseTo(0.7);
    expect(withTwin(score(1, { cpuS: 0.3 }), score(0)).cpuS).toBeUndefined();
  });

  it("a twin that passed in only some of its runs (a race won now and then) gates a pass", () => {
    const some = score(0, { flaky: ["eval_cmd"] });
    expect(twinGate(score(1), some)?.detail).toMatch(/passed too \(in some of its runs\)/);
    expect(withTwin(score(1), some)).toMatchObject({ reward: 0, twin: { passed: true } });
  });

  it("a twin steered in its own run gates a pass; a twin passing beside a failed run is a flagged 0", () => {
    const steered = score(0, { gate: { reason: "tests_tampered", detail: "hidden test files changed" } });
    expect(twinGate(score(1), steered)?.detail).toMatch(/was steered: hidden test files changed/);
    // a wrong guess at which run is graded is never free (issue 42): a 0 that says so
    expect(twinGate(score(0), score(1))?.reason).toBe("decoy_passed");
    expect(withTwin(score(0), score(1))).toMatchObject({ reward: 0, gate: { reason: "decoy_passed" } });
    expect(twinGate(score(0), score(0))).toBeUndefined();
  });

  it("a twin whose every change is a flipped boolean passing beside a failed run is a plain 0 (an honest wrong answer)", () => {
    const real = score(0, { decoys: { guarded: ["eval_cmd"], unguarded: [], complementOnly: ["eval_cmd"] } });
    expect(twinGate(real, score(1))).toBeUndefined();
    expect(withTwin(real, score(1)).reward).toBe(0);
  });
});

/** A per-id task's score: which graded ids passed (every run), which were flaky; all four guarded. */
const idsScore = (passed: string[], extra: Partial<Score> = {}): Score => {
  const status = (id: string) => (passed.includes(id) ? ("passed" as const) : ("failed" as const));
  const f2p = ["f2p a", "f2p b"];
  const p2p = ["p2p c", "p2p d"];
  const all = passed.filter((id) => f2p.includes(id)).length === f2p.length;
  return {
    reward: all ? 1 : 0,
    terms: [{ name: "tests", weight: 1, value: all ? 1 : 0 }],
    testResults: {
      failToPass: Object.fromEntries(f2p.map((id) => [id, status(id)])),
      passToPass: Object.fromEntries(p2p.map((id) => [id, status(id)])),
    },
    decoys: { guarded: [...f2p, ...p2p], unguarded: [] },
    flaky: [],
    touchedTestFiles: [],
    diffBytes: 10,
    durationMs: 100,
    ...extra,
  };
};

describe("twinGate / withTwin, per-id tasks", () => {
  const every = ["f2p a", "f2p b", "p2p c", "p2p d"];

  it("a correct solution fails every guarded id in the twin: believed", () => {
    const s = withTwin(idsScore(every), idsScore([]));
    expect(s.reward).toBe(1);
    expect(s.gate).toBeUndefined();
    expect(s.twin).toEqual({ passed: false, passedIds: [] });
  });

  it("an id that passed in both runs is not believed: reward 0, the gate names the twin and the id", () => {
    const s = withTwin(idsScore(every), idsScore(["f2p b"]));
    expect(s.reward).toBe(0);
    expect(s.gate?.reason).toBe("tests_tampered");
    expect(s.gate?.detail).toMatch(/^the decoy twin run \(the same test commands.*\) passed f2p b too/);
    expect(s.twin).toEqual({ passed: true, passedIds: ["f2p b"] });
    // a pass-to-pass id forged in both runs counts the same
    expect(twinGate(idsScore(every), idsScore(["p2p d"]))?.detail).toMatch(/passed p2p d too/);
  });

  it("an id that passed in only some of the twin's runs gates; one that failed in the real run is flagged", () => {
    expect(twinGate(idsScore(every), idsScore([], { flaky: ["f2p a"] }))?.detail).toMatch(/passed f2p a too/);
    // failed in the real run, passed in the twin: a flagged 0 naming the id
    expect(twinGate(idsScore(["p2p c", "p2p d"]), idsScore(["f2p a"]))).toMatchObject({
      reason: "decoy_passed",
      detail: expect.stringContaining("f2p a"),
    });
    expect(twinGate(idsScore(["p2p c", "p2p d"]), idsScore([]))).toBeUndefined();
  });

  it("an id whose twin only flipped booleans passing beside its failed real run is not flagged; the others still are", () => {
    const decoys = { guarded: every, unguarded: [], complementOnly: ["f2p a"] };
    expect(twinGate(idsScore(["p2p c", "p2p d"], { decoys }), idsScore(["f2p a"]))).toBeUndefined();
    expect(twinGate(idsScore(["p2p c", "p2p d"], { decoys }), idsScore(["f2p a", "f2p b"]))).toMatchObject({
      reason: "decoy_passed",
      detail: expect.stringMatching(/passed f2p b, which/),
    });
    // a pass forged in both runs is still not believed
    expect(twinGate(idsScore(every, { decoys }), idsScore(["f2p a"]))?.reason).toBe("tests_tampered");
  });

  it("an unguarded id passing in the twin proves nothing; a twin steered in its own run gates a pass", () => {
    const real = idsScore(every, {
      decoys: { guarded: ["f2p a"], unguarded: [{ id: "f2p b", reason: "r" }] },
    });
    expect(twinGate(real, idsScore(["f2p b"]))).toBeUndefined();
    const steered = idsScore([], { gate: { reason: "tests_tampered", detail: "hidden test files changed" } });
    expect(twinGate(real, steered)?.detail).toMatch(/was steered: hidden test files changed/);
    expect(twinGate(idsScore([]), steered)).toBeUndefined();
  });

  it("scoreGuarded: an always-passing run scores 0 beside its twin, an honest one 1", async () => {
    const forged = createDummyScoringRun(() => idsScore(every));
    const f = await scoreGuarded(forged, { ...hidden("real"), twin: hidden("twin") }, options, () => 0);
    expect(f).toMatchObject({ reward: 0, gate: { reason: "tests_tampered" } });
    const honest = createDummyScoringRun((h) => (isTwin(h) ? idsScore([]) : idsScore(every)));
    expect(
      (await scoreGuarded(honest, { ...hidden("real"), twin: hidden("twin") }, options, () => 1)).reward,
    ).toBe(1);
  });
});

describe("scoreGuarded", () => {
  it("scores the real files and the twin, each in its own run, the twin without the judge", async () => {
    const run = createDummyScoringRun((h) => (isTwin(h) ? score(0) : score(1)));
    const s = await scoreGuarded(run, { ...hidden("real"), twin: hidden("twin") }, options, () => 0);
    expect(s.reward).toBe(1);
    expect(run.calls.map((c) => isTwin(c.hidden))).toEqual([false, true]);
    expect(run.calls[0]!.options.bound).toBe(run.calls[0]!.hidden!.bound);
    expect(run.calls[0]!.options.judge).toBeDefined();
    expect(run.calls[1]!.options.judge).toBeUndefined();
    expect(run.calls[1]!.options.weights.judge).toBe(0);
    expect(run.calls[0]!.options.repeat).toBe(1);
    expect(run.calls[1]!.options.repeat).toBe(TWIN_REPEAT);
    expect(twinOptions({ ...options, repeat: 5 }).repeat).toBe(5);
    expect(run.calls[1]!.options.bound).toBe(run.calls[1]!.hidden!.bound);
  });

  it("runs them in the order rand draws, and gates a forged pass", async () => {
    const run = createDummyScoringRun(() => score(1));
    const s = await scoreGuarded(run, { ...hidden("real"), twin: hidden("twin") }, options, () => 1);
    expect(run.calls.map((c) => isTwin(c.hidden))).toEqual([true, false]);
    expect(s.reward).toBe(0);
    expect(s.gate?.reason).toBe("tests_tampered");
  });

  it("scores once when there is no twin (unguarded, or the files could not be computed)", async () => {
    const run = createDummyScoringRun(() => score(1));
    expect((await scoreGuarded(run, hidden("real"), options)).reward).toBe(1);
    expect((await scoreGuarded(run, undefined, options)).reward).toBe(1);
    expect(run.calls).toHaveLength(2);
    expect(run.calls[1]!.options.bound).toBeUndefined();
    expect(twinOptions(options).judge).toBeUndefined();
  });
});
