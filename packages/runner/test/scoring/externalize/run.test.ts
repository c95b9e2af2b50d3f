import { describe, expect, it } from "vitest";
import type { ExternalSite } from "../../../src/scoring/externalize/canon.js";
import { externalRunVerdict } from "../../../src/scoring/externalize/run.js";
import {
  composeScoringScript,
  emittedStep,
  type ParsedScoring,
  type ScoringPlan,
} from "../../../src/scoring/script.js";
import { parsedScoring } from "../../helpers/parsed-scoring.js";

const SITE: ExternalSite = {
  site: "aaaaaaaaaaaaaaaa",
  test: "t.py::test_a",
  kind: "eq",
  expected: { t: "int", v: "1" },
  opts: {},
  count: "one",
  pair: false,
};
const parsed = (step?: { output: string; cut?: true }): ParsedScoring =>
  parsedScoring(step ? { [emittedStep(0, 0)]: { exitCode: 0, outputBytes: 9e6, seconds: 0, ...step } } : {});

describe("a suite run's externalized verdict from the script's emitted step", () => {
  const line = `${JSON.stringify({ s: SITE.site, n: "t.py::test_a", v: { t: "int", v: "1" } })}\n`;
  it("reads the step; no step or a cut one fails the externalized tests (fail closed)", () => {
    expect(externalRunVerdict(parsed({ output: line }), 0, ["t.py::test_a"], [SITE]).size).toBe(0);
    expect(externalRunVerdict(parsed(), 0, ["t.py::test_a"], [SITE]).get("t.py::test_a")).toMatch(
      /no emissions/,
    );
    expect(
      externalRunVerdict(parsed({ output: line, cut: true }), 0, ["t.py::test_a"], [SITE]).get(
        "t.py::test_a",
      ),
    ).toMatch(/more than the/);
  });
  it("the script gives the suite's command FLAKEGYM_EMIT and reads the file back, only when asked", () => {
    const plan: ScoringPlan = {
      agentDiff: "",
      tests: [],
      suite: { command: "python3 -m pytest", resultPattern: "^PASSED" },
      testTimeoutMs: 1000,
      repeat: 1,
      maxOutputBytes: 1024,
    };
    const off = composeScoringScript(plan, { salt: "0123456789abcdef" }).script;
    const on = composeScoringScript({ ...plan, emissions: true }, { salt: "0123456789abcdef" }).script;
    expect(off).not.toContain("FLAKEGYM_EMIT");
    expect(on).toContain('( FLAKEGYM_EMIT="$C/emit"; export FLAKEGYM_EMIT; trun test.0.0');
    expect(on).toMatch(/emit emitted\.0\.0 0 "\$E" 0 8388608/);
  });
});
