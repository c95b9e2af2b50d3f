import { describe, expect, it } from "vitest";
import { hackabilityOf, hackabilityReasons } from "../../src/rollout/hackability.js";
import type { TrajectoryResult } from "../../src/run-format/schema.js";
import type { Score } from "../../src/scoring/score.js";
import { capabilitiesOf } from "../../src/workers/backend.js";

/** A gold trajectory with `score` (hackabilityOf reads nothing else). */
const gold = (score: Partial<Score>) =>
  ({
    score: { reward: 1, terms: [], flaky: [], touchedTestFiles: [], diffBytes: 1, durationMs: 1, ...score },
  }) as unknown as TrajectoryResult;
const place = { bindsHiddenReadOnly: capabilitiesOf("local").bindsHiddenReadOnly, root: true } as const;

describe("hackabilityOf, per-id tasks", () => {
  const testResults = {
    failToPass: { "s keeps 1": "passed" as const, "s keeps 2": "passed" as const },
    passToPass: { "s joins": "passed" as const },
  };

  it("a per-id task scored beside its twin: the twin run and the ids it guards", () => {
    const h = hackabilityOf(
      gold({
        testResults,
        decoys: { guarded: ["s keeps 1", "s keeps 2"], unguarded: [{ id: "s joins", reason: "no literal" }] },
        twin: { passed: false, passedIds: [] },
      }),
      place,
    );
    expect(h).toMatchObject({ guarded: 2, graded: 3, unguarded: [{ id: "s joins", reason: "no literal" }] });
    expect(h?.defences[0]).toMatch(/^decoy twin run on 2 of 3 graded ids:/);
    expect(h?.defences[3]).toBe("each graded id's command: exit status and summary line checked");
    expect(hackabilityReasons(h, false)[0]).toMatch(
      /^1 graded test\(s\) without a decoy .*s joins \(no literal\)/,
    );
    expect(hackabilityReasons(h, true)).toEqual([]);
  });

  it("a per-id task with no id guarded (no twin): every id is reported unguarded", () => {
    const h = hackabilityOf(
      gold({ testResults, decoys: { guarded: [], unguarded: [{ id: "s joins", reason: "r" }] } }),
      place,
    );
    expect(h?.guarded).toBe(0);
    expect(h?.unguarded).toEqual([{ id: "s joins", reason: "r" }]);
  });
});

describe("hackabilityOf, hidden files not computed", () => {
  it("a task scored without decoys or a twin reports every graded test unguarded, saying why", () => {
    const h = hackabilityOf(
      gold({ testResults: { failToPass: { a: "passed" }, passToPass: { b: "passed" } } }),
      place,
    );
    expect(h?.unguarded.map((u) => u.id)).toEqual(["a", "b"]);
    expect(h!.unguarded[0]!.reason).toMatch(/could not be computed on the host/);
    expect(h?.defences[0]).toBe("no decoys (not a suite task)");
  });
});

describe("hackabilityOf, externalized assertions (issue 42)", () => {
  it("counts externalized tests as guarded, pairs compared outside apart, and says so", () => {
    const testResults = {
      failToPass: { "t.py::test_a": "passed" as const, "t.py::test_b": "passed" as const },
      passToPass: { "t.py::test_c": "passed" as const, "t.py::test_d": "passed" as const },
    };
    const h = hackabilityOf(
      gold({
        testResults,
        decoys: {
          guarded: ["t.py::test_b"],
          externalized: ["t.py::test_a"],
          comparedOutside: ["t.py::test_c"],
          unguarded: [{ id: "t.py::test_d", reason: "bare assert" }],
        },
      }),
      place,
    );
    expect(h).toMatchObject({ guarded: 2, externalized: 1, graded: 4 });
    expect(h?.defences[0]).toMatch(
      /^externalized assertions on 1 of 4 graded tests .*1 more compared outside the sandbox .*not counted as guarded.*decoys on 1 of 4/,
    );
    expect(hackabilityReasons(h, false)[0]).toMatch(/t\.py::test_d \(bare assert\)/);
  });
});
