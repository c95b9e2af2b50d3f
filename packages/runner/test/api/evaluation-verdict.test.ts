import { describe, expect, it } from "vitest";
import { evaluationVerdict, type VerdictInput } from "../../src/api/evaluation-verdict.js";

const ran = {
  ok: true,
  used_anchors: ["Makefile:3"],
  commands: ["python -m unittest"],
  reason: "first test command (exit 1)",
};
const notRun = { ...ran, ok: false, reason: "first test command (exit 127: it did not run)" };
const none = { ok: false, used_anchors: [], commands: [], reason: "no hints found in the target" };
const base: VerdictInput = {
  outcome: { kind: "completed", detail: "the stage script exited with 0" },
  hintsUsed: ran,
  hasHints: true,
  rewards: [],
};
const summary = { tool: "unittest", passed: 3, failed: 1, errors: 0, skipped: 0 } as const;

describe("evaluationVerdict", () => {
  it("a command that ran and whose output was understood: ok, the tests' score", () => {
    expect(evaluationVerdict({ ...base, summary })).toEqual({
      ok: true,
      score: 0.75,
      source: "test-summary",
      reason: "unittest: 3 passed, 1 failed, 0 errors, 0 skipped",
    });
  });

  it("python: not found — the command never ran: not ok, no score, never the mean reward", () => {
    const v = evaluationVerdict({ ...base, hintsUsed: notRun, rewards: [{ reward: 1 }] });
    expect(v).toMatchObject({ ok: false, score: null, source: "none" });
    expect(v.reason).toBe(
      "the test command did not run (python -m unittest): first test command (exit 127: it did not run)",
    );
  });

  it("a command that ran but printed nothing flakegym reads: not ok, says so", () => {
    const v = evaluationVerdict({ ...base, rewards: [{ reward: 1 }] });
    expect(v).toMatchObject({ ok: false, score: null, source: "none" });
    expect(v.reason).toMatch(/ran \(python -m unittest\) but its output has no summary flakegym reads/);
    const empty = evaluationVerdict({ ...base, summary: { ...summary, passed: 0, failed: 0 } });
    expect(empty.reason).toMatch(/unittest ran no tests/);
  });

  it("metrics.json's score wins; a stage that hit a limit measured nothing", () => {
    expect(evaluationVerdict({ ...base, metrics: { ok: true, score: 0.4 }, summary })).toMatchObject({
      ok: true,
      score: 0.4,
      source: "metrics",
    });
    const limited = evaluationVerdict({
      ...base,
      outcome: { kind: "timeout", limit: "wall_clock", detail: "max_cmd_seconds (600 s)" },
      summary,
    });
    expect(limited).toMatchObject({ ok: false, score: null, source: "none" });
    expect(limited.reason).toMatch(/^the evaluation stage ended timeout: max_cmd_seconds \(600 s\)/);
    // a failing test command is the stage program's failure, not a fault: its summary counts
    const failing = evaluationVerdict({
      ...base,
      outcome: { kind: "agent_error", detail: "the stage script exited with 1" },
      summary,
    });
    expect(failing).toMatchObject({ ok: true, score: 0.75, source: "test-summary" });
  });

  it("no test command at all (a dataset file): the mean reward, or nothing to score", () => {
    expect(
      evaluationVerdict({
        ...base,
        hintsUsed: none,
        hasHints: false,
        rewards: [{ reward: 1 }, { reward: 0 }],
      }),
    ).toEqual({
      ok: true,
      score: 0.5,
      source: "mean-reward",
      reason: "no test command: the mean reward of the last rollout's 2 samples",
    });
    expect(evaluationVerdict({ ...base, hintsUsed: none, hasHints: false })).toMatchObject({
      ok: false,
      score: null,
      source: "none",
    });
  });
});
