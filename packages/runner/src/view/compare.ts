import { z } from "zod";
import { passAtK } from "../eval/metrics.js";
import type { ReportHead } from "./eval-data.js";
import type { TrajectoryRow } from "./query-schema.js";

/**
 * Two runs or two evals side by side: one row per task (runs) or per (item, policy) cell (evals),
 * with each side's pass figures and the change from A to B; regressions first, then fixes. Pure:
 * the server reads the rows (runs) or report.json (evals) and pages the result.
 */

export const CompareKind = z.enum(["runs", "evals"]);
export type CompareKind = z.infer<typeof CompareKind>;

export const Change = z.enum(["regression", "fix", "outcomes changed", "same", "only in A", "only in B"]);
export type Change = z.infer<typeof Change>;

export const CompareSide = z
  .object({
    n: z.number().int().describe("scored trajectories / trials"),
    c: z.number().int().describe("passed (reward 1)"),
    pass1: z.number().nullable(),
    passK: z.number().nullable().describe("unbiased pass@k at the row's k"),
    meanReward: z.number().nullable(),
    outcomes: z.record(z.string(), z.number().int()),
  })
  .strict();
export type CompareSide = z.infer<typeof CompareSide>;

export const CompareRow = z
  .object({
    key: z.string().describe("the task (runs) or 'item × policy' (evals)"),
    a: CompareSide.nullable(),
    b: CompareSide.nullable(),
    k: z.number().int().nullable().describe("the largest k both sides have trials for"),
    delta: z.number().nullable().describe("B − A: pass@1 (evals) or mean reward (runs)"),
    change: Change,
  })
  .strict();
export type CompareRow = z.infer<typeof CompareRow>;

export const CompareResponse = z
  .object({
    kind: CompareKind,
    a: z.string(),
    b: z.string(),
    pairing: z.string().describe("how rows of A and B were matched"),
    counts: z.partialRecord(Change, z.number().int()),
    total: z.number().int(),
    page: z.number().int(),
    size: z.number().int(),
    rows: z.array(CompareRow),
  })
  .strict();
export type CompareResponse = z.infer<typeof CompareResponse>;

/** What one side contributes to a row: its trials' rewards and outcomes. */
interface Samples {
  readonly rewards: (number | null)[];
  readonly outcomes: string[];
}

function sideOf(s: Samples | undefined, k: number | null): CompareSide | null {
  if (!s) return null;
  const scored = s.rewards.filter((r): r is number => r !== null);
  const c = scored.filter((r) => r === 1).length;
  const outcomes: Record<string, number> = {};
  for (const o of s.outcomes) outcomes[o] = (outcomes[o] ?? 0) + 1;
  return {
    n: scored.length,
    c,
    pass1: scored.length ? c / scored.length : null,
    passK: k === null ? null : passAtK(scored.length, c, k),
    meanReward: scored.length ? scored.reduce((x, y) => x + y, 0) / scored.length : null,
    outcomes,
  };
}

const sameOutcomes = (x: Record<string, number>, y: Record<string, number>) => {
  const keys = new Set([...Object.keys(x), ...Object.keys(y)]);
  return [...keys].every((o) => (x[o] ?? 0) === (y[o] ?? 0));
};

/** One row from both sides' samples; `by` picks the figure whose change decides the row. */
export function compareRow(
  key: string,
  a: Samples | undefined,
  b: Samples | undefined,
  by: "pass1" | "meanReward",
): CompareRow {
  const nA = a?.rewards.filter((r) => r !== null).length ?? 0;
  const nB = b?.rewards.filter((r) => r !== null).length ?? 0;
  const k = a && b && Math.min(nA, nB) > 0 ? Math.min(nA, nB) : null;
  const sa = sideOf(a, k);
  const sb = sideOf(b, k);
  const va = sa?.[by] ?? null;
  const vb = sb?.[by] ?? null;
  const delta = va !== null && vb !== null ? vb - va : null;
  const change: Change = !sa
    ? "only in B"
    : !sb
      ? "only in A"
      : delta !== null && delta < -1e-9
        ? "regression"
        : delta !== null && delta > 1e-9
          ? "fix"
          : sameOutcomes(sa.outcomes, sb.outcomes)
            ? "same"
            : "outcomes changed";
  return { key, a: sa, b: sb, k, delta, change };
}

const ORDER: Change[] = ["regression", "fix", "outcomes changed", "only in A", "only in B", "same"];

/** Regressions first (largest drop first), then fixes (largest gain first), then the rest by key. */
export function sortCompareRows(rows: CompareRow[]): CompareRow[] {
  return rows.sort(
    (x, y) =>
      ORDER.indexOf(x.change) - ORDER.indexOf(y.change) ||
      (x.change === "regression" ? (x.delta ?? 0) - (y.delta ?? 0) : 0) ||
      (x.change === "fix" ? (y.delta ?? 0) - (x.delta ?? 0) : 0) ||
      x.key.localeCompare(y.key, undefined, { numeric: true }),
  );
}

function bySamples<T>(
  xs: readonly T[],
  keyOf: (x: T) => string,
  reward: (x: T) => number | null,
  outcome: (x: T) => string,
) {
  const m = new Map<string, { rewards: (number | null)[]; outcomes: string[] }>();
  for (const x of xs) {
    const s = m.get(keyOf(x)) ?? { rewards: [], outcomes: [] };
    s.rewards.push(reward(x));
    s.outcomes.push(outcome(x));
    m.set(keyOf(x), s);
  }
  return m;
}

/** Two runs: one row per task, compared by mean reward. Pure. */
export function compareRuns(a: readonly TrajectoryRow[], b: readonly TrajectoryRow[]): CompareRow[] {
  const sa = bySamples(
    a,
    (r) => r.task,
    (r) => r.reward,
    (r) => r.outcome,
  );
  const sb = bySamples(
    b,
    (r) => r.task,
    (r) => r.reward,
    (r) => r.outcome,
  );
  const tasks = new Set([...sa.keys(), ...sb.keys()]);
  return sortCompareRows([...tasks].map((t) => compareRow(t, sa.get(t), sb.get(t), "meanReward")));
}

/** The parts of a trial row a comparison reads (report.json came near the agent: parsed leniently). */
const TrialSample = z.object({
  item: z.string(),
  policy: z.string(),
  reward: z.number().nullable(),
  outcome: z.string(),
});
type TrialSample = z.infer<typeof TrialSample>;

const trialSamples = (r: ReportHead): TrialSample[] =>
  (r.trials ?? []).flatMap((t) => {
    const p = TrialSample.safeParse(t);
    return p.success ? [p.data] : [];
  });

/**
 * How the policies of two evals are matched: the same policy spec on both sides; or, when each eval
 * has exactly one policy and they differ (model A against model B), those two. Pure.
 */
export function pairPolicies(
  a: readonly string[],
  b: readonly string[],
): { map: Map<string, string>; how: string } {
  const [onlyA] = a;
  const [onlyB] = b;
  if (a.length === 1 && b.length === 1 && onlyA !== undefined && onlyB !== undefined && onlyA !== onlyB)
    return { map: new Map([[onlyB, onlyA]]), how: `policy ${onlyA} (A) against ${onlyB} (B), item by item` };
  return { map: new Map(b.filter((p) => a.includes(p)).map((p) => [p, p])), how: "same item and policy" };
}

const labelOf = (r: ReportHead, spec: string) => r.policies?.find((p) => p.policy === spec)?.label ?? spec;

/** Two evals: one row per (item, policy), compared by pass@1 (and unbiased pass@k at a common k). Pure. */
export function compareEvals(a: ReportHead, b: ReportHead): { rows: CompareRow[]; pairing: string } {
  const ta = trialSamples(a);
  const tb = trialSamples(b);
  const policiesOf = (ts: TrialSample[]) => [...new Set(ts.map((t) => t.policy))];
  const pairing = pairPolicies(policiesOf(ta), policiesOf(tb));
  const key = (item: string, label: string) => `${item} × ${label}`;
  const sa = bySamples(
    ta,
    (t) => key(t.item, labelOf(a, t.policy)),
    (t) => t.reward,
    (t) => t.outcome,
  );
  const sb = bySamples(
    tb,
    (t) => {
      const p = pairing.map.get(t.policy);
      return p === undefined ? key(t.item, `${labelOf(b, t.policy)} (B)`) : key(t.item, labelOf(a, p));
    },
    (t) => t.reward,
    (t) => t.outcome,
  );
  const keys = new Set([...sa.keys(), ...sb.keys()]);
  return {
    rows: sortCompareRows([...keys].map((k) => compareRow(k, sa.get(k), sb.get(k), "pass1"))),
    pairing: pairing.how,
  };
}

/** Counts per change and one page of the rows. Pure. */
export function pageCompare(
  rows: readonly CompareRow[],
  page: number,
  size: number,
): Pick<CompareResponse, "counts" | "total" | "page" | "size" | "rows"> {
  const counts: Partial<Record<Change, number>> = {};
  for (const r of rows) counts[r.change] = (counts[r.change] ?? 0) + 1;
  return { counts, total: rows.length, page, size, rows: rows.slice(page * size, (page + 1) * size) };
}
