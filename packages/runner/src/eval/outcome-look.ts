/**
 * How an outcome is shown (report.html and `flakegym view` alike): a trajectory that ended
 * `completed` but did not pass does not get a success colour — its label says it was unsolved
 * (reward 0) or partial — and a trajectory without a reward (infra error) is grey. Pure, no
 * imports: the browser bundle uses it too.
 */
export interface OutcomeLook {
  /** `ok` (passed), `partial`, `bad` (reward 0 or a failed ending), `infra` (no reward). */
  readonly tone: "ok" | "partial" | "bad" | "infra";
  readonly label: string;
}

export function outcomeLook(outcome: string, reward: number | null | undefined, limit?: string): OutcomeLook {
  const named = `${outcome}${limit ? ` (${limit})` : ""}`;
  if (reward === null || reward === undefined) return { tone: "infra", label: named };
  if (reward >= 1) return { tone: "ok", label: named };
  if (outcome !== "completed") return { tone: reward > 0 ? "partial" : "bad", label: named };
  return reward > 0
    ? { tone: "partial", label: `completed · partial (${reward.toFixed(2)})` }
    : { tone: "bad", label: "completed · unsolved" };
}
