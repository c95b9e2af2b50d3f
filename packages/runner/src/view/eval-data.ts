import { z } from "zod";
import { checkedSegments } from "./safe-read.js";

/**
 * What the viewer reads from an eval's `report.json`: where each trial's trajectory files went
 * (`flakegym eval` moves `run/trajectories/<id>/` to `<item>/<policy>/trial-<n>/`) and the few
 * numbers an index row shows. The report came near the agent (its ids, its test names), so it is
 * parsed leniently and every path in it is checked segment by segment before use. Pure.
 */

const TrialLinks = z.object({ trajectoryId: z.string(), links: z.object({ dir: z.string() }).passthrough() });
const PolicyHead = z.object({
  policy: z.string(),
  label: z.string(),
  pooled: z.object({ pass1: z.number().nullable().optional() }).passthrough(),
  meanReward: z.number().nullable().optional(),
});
/** The parts of report.json the viewer uses (the rest of the report is the eval's own schema). */
export const ReportHead = z
  .object({
    evalId: z.string().optional(),
    createdAt: z.string().optional(),
    complete: z.boolean().optional(),
    items: z.array(z.unknown()).optional(),
    policies: z.array(PolicyHead).optional(),
    trials: z.array(z.unknown()).optional(),
    provenance: z.object({ trials: z.number().optional() }).passthrough().optional(),
  })
  .passthrough();
export type ReportHead = z.infer<typeof ReportHead>;

/** One eval in the index: its numbers for the row (all optional: a report may be partial). */
export const EvalSummary = z
  .object({
    evalId: z.string().optional(),
    createdAt: z.string().optional(),
    complete: z.boolean().optional(),
    items: z.number().int().optional(),
    trials: z.number().int().optional().describe("trials per (item, policy)"),
    trajectories: z.number().int().optional(),
    policies: z
      .array(
        z
          .object({
            policy: z.string(),
            label: z.string(),
            pass1: z.number().nullable(),
            meanReward: z.number().nullable(),
          })
          .strict(),
      )
      .optional(),
  })
  .strict();
export type EvalSummary = z.infer<typeof EvalSummary>;

/** Trajectory id → the trial dir's segments (relative to the eval dir); bad rows are left out. */
export function trialDirsOf(report: ReportHead): Map<string, string[]> {
  const dirs = new Map<string, string[]>();
  for (const t of report.trials ?? []) {
    const p = TrialLinks.safeParse(t);
    if (!p.success) continue;
    try {
      dirs.set(p.data.trajectoryId, checkedSegments(p.data.links.dir));
    } catch {
      // a path the viewer refuses (`..`, odd characters): that trial is not browsable
    }
  }
  return dirs;
}

/** The index row's numbers of a report. */
export function evalSummaryOf(report: ReportHead): EvalSummary {
  const policies = report.policies?.map((p) => ({
    policy: p.policy,
    label: p.label,
    pass1: p.pooled.pass1 ?? null,
    meanReward: p.meanReward ?? null,
  }));
  return {
    ...(report.evalId !== undefined ? { evalId: report.evalId } : {}),
    ...(report.createdAt !== undefined ? { createdAt: report.createdAt } : {}),
    ...(report.complete !== undefined ? { complete: report.complete } : {}),
    ...(report.items ? { items: report.items.length } : {}),
    ...(report.provenance?.trials !== undefined ? { trials: report.provenance.trials } : {}),
    ...(report.trials ? { trajectories: report.trials.length } : {}),
    ...(policies ? { policies } : {}),
  };
}
