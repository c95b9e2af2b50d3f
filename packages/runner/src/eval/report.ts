import { z } from "zod";
import { ClineProvenance, InfraRetryCount, LimitName, OutcomeKind } from "../run-format/schema.js";
import {
  PassStats,
  PooledStats,
  passStats,
  poolStats,
  regressionTest,
  TestFlake,
  testFlakeRates,
} from "./metrics.js";

/**
 * `report.json` of an eval (versioned; the schema is the type) and the pure functions that build
 * it from finished trials and compare it with a baseline.
 */

export const Phases = z
  .object({
    snapshotMs: z.number(),
    forkMs: z.number(),
    bootMs: z.number(),
    agentMs: z.number(),
    scoreMs: z.number(),
  })
  .strict()
  .describe("wall time per phase, ms");
export type Phases = z.infer<typeof Phases>;

/** One trial: a row of the report, with links (relative to the eval directory) to its files. */
export const TrialRow = z
  .object({
    item: z.string(),
    policy: z.string().describe("policy spec"),
    trial: z.number().int().describe("0-based trial number of this (item, policy)"),
    trajectoryId: z.string(),
    outcome: OutcomeKind,
    limit: LimitName.optional(),
    detail: z.string().describe("why it ended"),
    reward: z.number().nullable().describe("null: infra_error after every retry (not a sample)"),
    passed: z.boolean().describe("reward is 1"),
    checks: z
      .record(z.string(), z.enum(["passed", "failed", "missing"]))
      .describe("hidden tests / scenario checks and their status"),
    failures: z
      .array(z.object({ test: z.string(), message: z.string() }).strict())
      .optional()
      .describe(
        "each hidden test that did not pass, with its failing assertion or message (score.json testOutput)",
      ),
    flakyTests: z.array(z.string()).describe("hidden tests that flipped across --test-repeat runs"),
    turns: z.number().int(),
    toolCalls: z.number().int(),
    tokensIn: z.number().int(),
    tokensOut: z.number().int(),
    phases: Phases,
    infraRetries: InfraRetryCount,
    links: z
      .object({
        log: z.string().describe("trial-<n>.log"),
        dir: z.string().describe("trial-<n>/: result.json, score.json, diff.patch, turns.jsonl, cline/"),
        diff: z.string(),
        workspace: z.string().optional().describe("the kept workspace (--keep-workspaces)"),
      })
      .strict(),
  })
  .strict();
export type TrialRow = z.infer<typeof TrialRow>;

export const Cell = z
  .object({
    item: z.string(),
    policy: z.string(),
    stats: PassStats,
    meanReward: z.number().nullable(),
    infraErrors: z.number().int(),
  })
  .strict();
export type Cell = z.infer<typeof Cell>;

export const Price = z
  .object({
    inputPerMTok: z.number().min(0).describe("price of a million prompt tokens"),
    outputPerMTok: z.number().min(0).describe("price of a million completion tokens"),
  })
  .strict();
/** `--prices <file>`: per-token prices by policy spec. */
export const Prices = z.record(z.string(), Price);
export type Prices = z.infer<typeof Prices>;

export const PolicySummary = z
  .object({
    policy: z.string(),
    label: z.string().describe("short name, also the directory name under each item"),
    pooled: PooledStats,
    meanReward: z.number().nullable(),
    tokensIn: z.number().int(),
    tokensOut: z.number().int(),
    modelCalls: z.number().int(),
    toolCalls: z.number().int(),
    phasesMs: Phases.describe(
      "summed over the policy's trials, but snapshotMs: each item's snapshot is built once for all its trials and policies, so this is the policy's even share of it (see sharedMs)",
    ),
    cost: z.number().optional().describe("with --prices: tokens × prices"),
  })
  .strict();
export type PolicySummary = z.infer<typeof PolicySummary>;

export const Comparison = z
  .object({
    scope: z.string().describe("'<policy>' (pooled) or '<item> × <policy>'"),
    baseline: z.object({ n: z.number().int(), c: z.number().int() }).strict(),
    current: z.object({ n: z.number().int(), c: z.number().int() }).strict(),
    z: z.number().nullable(),
    regressed: z.boolean(),
  })
  .strict();
export type Comparison = z.infer<typeof Comparison>;

export const EvalReport = z
  .object({
    version: z.literal(1),
    evalId: z.string(),
    createdAt: z.string(),
    durationMs: z.number(),
    complete: z.boolean().describe("every trial finished (not interrupted)"),
    provenance: z
      .object({
        flakegymVersion: z.string(),
        cline: ClineProvenance,
        node: z.string(),
        runId: z.string().describe("the rollout run under run/"),
        seed: z.number().int(),
        trials: z.number().int(),
        testRepeat: z.number().int(),
        concurrency: z.number().int(),
        backend: z.string(),
        snapshotKeys: z.record(z.string(), z.string()).describe("snapshot key per item"),
      })
      .strict(),
    items: z
      .array(
        z
          .object({
            id: z.string(),
            kind: z.enum(["scenario", "task", "dataset"]),
            source: z.string().describe("scenario directory, catalog task or dataset row"),
          })
          .strict(),
      )
      .describe("rows of the report"),
    policies: z.array(PolicySummary).describe("columns of the report"),
    cells: z.array(Cell),
    trials: z.array(TrialRow),
    sharedMs: z
      .object({
        snapshotMs: z.number().describe("every item's snapshot time, each counted once"),
      })
      .strict()
      .optional()
      .describe("work done once and shared by every trial (absent in reports written before it)"),
    testFlakes: z.array(TestFlake).describe("per hidden test: flips across --test-repeat runs on one diff"),
    itemErrors: z
      .array(z.object({ item: z.string(), code: z.string(), message: z.string() }).strict())
      .describe("items that could not run at all (snapshot build failed, …)"),
    baseline: z
      .object({
        file: z.string(),
        test: z.string().describe("the statistical test and threshold"),
        comparisons: z.array(Comparison),
        regressions: z.array(z.string()).describe("scopes that regressed"),
      })
      .strict()
      .optional(),
  })
  .strict();
export type EvalReport = z.infer<typeof EvalReport>;

const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const meanOrNull = (xs: readonly number[]) => (xs.length ? sum(xs) / xs.length : null);

/** The cell of one (item, policy) from its trials. Pure. */
export function cellOf(item: string, policy: string, trials: readonly TrialRow[]): Cell {
  const scored = trials.filter((t) => t.reward !== null);
  return {
    item,
    policy,
    stats: passStats(scored.length, scored.filter((t) => t.passed).length),
    meanReward: meanOrNull(scored.map((t) => t.reward as number)),
    infraErrors: trials.length - scored.length,
  };
}

/**
 * Snapshot time counted once: an eval runs each item as one group, so every trial of the item, of
 * every policy, records the same snapshot build (its `snapshotMs`). Each item counts once — the
 * largest time any of its trials recorded — and is split evenly among the policies that ran it.
 * Pure.
 */
export function sharedSnapshotMs(trials: readonly TrialRow[]): {
  totalMs: number;
  byPolicy: Record<string, number>;
} {
  const items = new Map<string, { ms: number; policies: Set<string> }>();
  for (const t of trials) {
    const it = items.get(t.item) ?? { ms: 0, policies: new Set<string>() };
    it.ms = Math.max(it.ms, t.phases.snapshotMs);
    it.policies.add(t.policy);
    items.set(t.item, it);
  }
  const byPolicy: Record<string, number> = {};
  let totalMs = 0;
  for (const it of items.values()) {
    totalMs += it.ms;
    for (const p of it.policies) byPolicy[p] = (byPolicy[p] ?? 0) + it.ms / it.policies.size;
  }
  return { totalMs, byPolicy };
}

/** A policy's column summary; `snapshotShareMs` is its share of the snapshots ({@link sharedSnapshotMs}). Pure. */
export function policySummaryOf(
  policy: string,
  label: string,
  cells: readonly Cell[],
  trials: readonly TrialRow[],
  snapshotShareMs: number,
  price?: z.infer<typeof Price>,
): PolicySummary {
  const scored = trials.filter((t) => t.reward !== null);
  const tokensIn = sum(trials.map((t) => t.tokensIn));
  const tokensOut = sum(trials.map((t) => t.tokensOut));
  const phase = (k: keyof Phases) => sum(trials.map((t) => t.phases[k]));
  return {
    policy,
    label,
    pooled: poolStats(cells.map((c) => c.stats)),
    meanReward: meanOrNull(scored.map((t) => t.reward as number)),
    tokensIn,
    tokensOut,
    modelCalls: sum(trials.map((t) => t.turns)),
    toolCalls: sum(trials.map((t) => t.toolCalls)),
    phasesMs: {
      snapshotMs: snapshotShareMs,
      forkMs: phase("forkMs"),
      bootMs: phase("bootMs"),
      agentMs: phase("agentMs"),
      scoreMs: phase("scoreMs"),
    },
    ...(price ? { cost: (tokensIn * price.inputPerMTok + tokensOut * price.outputPerMTok) / 1e6 } : {}),
  };
}

export interface ReportInput {
  readonly evalId: string;
  readonly createdAt: string;
  readonly durationMs: number;
  readonly complete: boolean;
  readonly provenance: EvalReport["provenance"];
  readonly items: EvalReport["items"];
  /** Policy specs in column order, with their labels. */
  readonly policies: readonly { readonly spec: string; readonly label: string }[];
  readonly trials: readonly TrialRow[];
  readonly prices?: Prices;
  readonly itemErrors: EvalReport["itemErrors"];
}

/** The report of finished trials (without a baseline). Pure. */
export function buildReport(i: ReportInput): EvalReport {
  const cells: Cell[] = [];
  for (const item of i.items) {
    for (const p of i.policies) {
      const ts = i.trials.filter((t) => t.item === item.id && t.policy === p.spec);
      cells.push(cellOf(item.id, p.spec, ts));
    }
  }
  const snapshots = sharedSnapshotMs(i.trials);
  const policies = i.policies.map((p) =>
    policySummaryOf(
      p.spec,
      p.label,
      cells.filter((c) => c.policy === p.spec),
      i.trials.filter((t) => t.policy === p.spec),
      snapshots.byPolicy[p.spec] ?? 0,
      i.prices?.[p.spec],
    ),
  );
  const testFlakes = testFlakeRates(
    i.trials
      .filter((t) => t.reward !== null)
      .map((t) => ({ item: t.item, tests: Object.keys(t.checks), flaky: t.flakyTests })),
  );
  return {
    version: 1,
    evalId: i.evalId,
    createdAt: i.createdAt,
    durationMs: i.durationMs,
    complete: i.complete,
    provenance: i.provenance,
    items: i.items,
    policies,
    cells,
    trials: [...i.trials],
    sharedMs: { snapshotMs: snapshots.totalMs },
    testFlakes,
    itemErrors: i.itemErrors,
  };
}

/** The regression test and threshold, as report.json and summary.md state them. */
export const REGRESSION_TEST =
  "one-sided two-proportion z-test (pooled variance) on pass counts, z ≥ 1.645 (5 % level), at least 3 trials on each side";

/**
 * Compares a report with a baseline report: per policy (pooled over the items both have) and per
 * (item, policy). A scope regressed when its pass rate dropped significantly. Pure.
 */
export function compareWithBaseline(now: EvalReport, base: EvalReport, file: string): EvalReport["baseline"] {
  const comparisons: Comparison[] = [];
  const baseCell = new Map(base.cells.map((c) => [JSON.stringify([c.item, c.policy]), c]));
  for (const p of now.policies) {
    let bn = 0;
    let bc = 0;
    let cn = 0;
    let cc = 0;
    for (const c of now.cells.filter((x) => x.policy === p.policy)) {
      const b = baseCell.get(JSON.stringify([c.item, c.policy]));
      if (!b) continue;
      bn += b.stats.n;
      bc += b.stats.c;
      cn += c.stats.n;
      cc += c.stats.c;
      const r = regressionTest(b.stats, c.stats);
      comparisons.push({
        scope: `${c.item} × ${c.policy}`,
        baseline: { n: b.stats.n, c: b.stats.c },
        current: { n: c.stats.n, c: c.stats.c },
        ...r,
      });
    }
    if (bn > 0) {
      const r = regressionTest({ n: bn, c: bc }, { n: cn, c: cc });
      comparisons.unshift({ scope: p.policy, baseline: { n: bn, c: bc }, current: { n: cn, c: cc }, ...r });
    }
  }
  return {
    file,
    test: REGRESSION_TEST,
    comparisons,
    regressions: comparisons.filter((c) => c.regressed).map((c) => c.scope),
  };
}

/** Short, unique, file-name-safe labels of policy specs (`gold`, `scripted-mixed`, `openai-qwen3-8b`). Pure. */
export function policyLabels(specs: readonly string[]): string[] {
  const base = specs.map((s) => {
    const kind = s.split(":")[0] ?? s;
    const tail = s.includes("#")
      ? s.slice(s.lastIndexOf("#") + 1)
      : s.includes(":")
        ? (
            s
              .slice(s.indexOf(":") + 1)
              .split("/")
              .pop() ?? ""
          ).replace(/\.json$/, "")
        : "";
    const raw = tail ? `${kind}-${tail}` : kind;
    return (
      raw
        .toLowerCase()
        .replace(/[^a-z0-9._-]+/g, "-")
        .replace(/^[-.]+|-+$/g, "")
        .slice(0, 60) || "policy"
    );
  });
  return base.map((b, i) => (base.indexOf(b) === i && base.lastIndexOf(b) === i ? b : `${i + 1}-${b}`));
}
