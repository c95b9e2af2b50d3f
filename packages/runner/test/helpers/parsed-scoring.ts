import type { ParsedScoring, StepResult } from "../../src/scoring/script.js";

/** A scoring script's parsed channel that ended whole, sealed, after the agent's code ran, with `steps`. */
export function parsedScoring(steps: Readonly<Record<string, StepResult>>): ParsedScoring {
  return {
    steps: new Map(Object.entries(steps)),
    done: true,
    unfinished: [],
    agentRan: true,
    anomalies: [],
    sealed: true,
    channel: "sealed",
  };
}
