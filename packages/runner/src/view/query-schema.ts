import { z } from "zod";
import { InfraRetryCount } from "../run-format/schema.js";
import { TrajectoryRow } from "../run-format/trajectory-record.js";
import { ROW_QUERY_DEFAULTS } from "./query.js";

/**
 * The schemas of the run table (groups, the query from the URL; a row is the run format's
 * `TrajectoryRow`). The pure functions over
 * them are in query.ts, which imports only these types, so the browser bundle carries no zod.
 */
export { TrajectoryRow };

export const SortKey = z.enum([
  "id",
  "task",
  "index",
  "policy",
  "outcome",
  "reward",
  "turns",
  "tokens",
  "time",
  "retries",
]);
export type SortKey = z.infer<typeof SortKey>;

/** The run table's query: filters, sort and page, from the URL's search params. */
export const RowQuery = z
  .object({
    outcome: z.string().optional().describe("keep this outcome kind"),
    task: z.string().optional().describe("keep task ids containing this text"),
    policy: z.string().optional().describe("keep policies containing this text"),
    minReward: z.coerce.number().optional(),
    maxReward: z.coerce.number().optional(),
    sort: SortKey.default(ROW_QUERY_DEFAULTS.sort),
    dir: z.enum(["asc", "desc"]).default(ROW_QUERY_DEFAULTS.dir),
    page: z.coerce.number().int().min(0).default(ROW_QUERY_DEFAULTS.page),
    size: z.coerce.number().int().min(1).max(500).default(ROW_QUERY_DEFAULTS.size),
  })
  .strict();
export type RowQuery = z.infer<typeof RowQuery>;

/** A task's group, aggregated from its rows. */
export const GroupRow = z
  .object({
    task: z.string(),
    trajectories: z.number().int(),
    expected: z.number().int().nullable(),
    rewards: z.array(z.number().nullable()),
    meanReward: z.number().nullable(),
    outcomes: z.record(z.string(), z.number().int()),
    turns: z.number(),
    tokens: z.number(),
    timings: TrajectoryRow.shape.timings.describe("mean per-phase ms"),
    infraRetries: InfraRetryCount,
    atropos: z.string().describe("sent, dropped, pending, off, or unknown"),
    group: z.string().describe("written, missing or unknown"),
  })
  .strict();
export type GroupRow = z.infer<typeof GroupRow>;
