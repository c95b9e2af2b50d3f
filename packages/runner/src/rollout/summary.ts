import { z } from "zod";
import { InfraRetryCount, LimitName, OutcomeKind, type TrajectoryResult } from "../run-format/schema.js";
import { infraRetryCount } from "../run-format/trajectory-record.js";
import { reasonOf } from "./classify-outcome.js";

/** `summary.json` and the table printed at the end of a run. Pure. */

/** How one trajectory ended, as summary.json lists it. */
export const TrajectoryReason = z
  .object({
    trajectoryId: z.string(),
    index: z.number().int().describe("position in the group"),
    kind: OutcomeKind,
    limit: LimitName.optional().describe("the limit that ended it (limits_exceeded, timeout)"),
    detail: z.string().describe("why it ended"),
  })
  .strict();
export type TrajectoryReason = z.infer<typeof TrajectoryReason>;

export const TaskSummary = z
  .object({
    taskId: z.string(),
    trajectories: z.number().int().describe("finished trajectories"),
    expected: z.number().int().describe("group size"),
    rewards: z.array(z.number().nullable()).describe("by trajectory index; null: infra failure or not run"),
    meanReward: z.number().nullable(),
    resolved: z.number().int().describe("trajectories with reward 1"),
    outcomes: z.record(z.string(), z.number().int()),
    reasons: z.array(TrajectoryReason).describe("every finished trajectory's end, by index"),
    group: z.enum(["written", "missing"]),
    atropos: z.enum(["sent", "dropped", "pending", "off"]),
    error: z
      .object({ code: z.string(), message: z.string() })
      .strict()
      .optional()
      .describe("why the task could not run (snapshot build, task load, …)"),
  })
  .strict();
export type TaskSummary = z.infer<typeof TaskSummary>;

/** What a `--dataset` run took from its file. */
export const RunDatasetSummary = z
  .object({
    file: z.string().describe("the dataset file"),
    sha256: z.string().describe("its sha256 (as recorded in run.json)"),
    rows: z.number().int().describe("rows read"),
    accepted: z.number().int().describe("rows accepted (schema-valid, usable ids)"),
    rejected: z.number().int().describe("rows rejected (listed with file, row, field, reason)"),
    used: z.number().int().describe("accepted rows this run rolls out (--limit)"),
    rejectedRows: z
      .array(
        z
          .object({ row: z.number().int(), field: z.string(), reason: z.string(), id: z.string().optional() })
          .strict(),
      )
      .describe("every rejected row"),
  })
  .strict();
export type RunDatasetSummary = z.infer<typeof RunDatasetSummary>;

export const RunSummary = z
  .object({
    runId: z.string(),
    out: z.string(),
    complete: z.boolean().describe("every trajectory finished and every group written"),
    interrupted: z.boolean(),
    stopped: z
      .object({ code: z.string(), message: z.string() })
      .strict()
      .optional()
      .describe("why the run could not go on (a full disk, a file it cannot write): fix that, then --resume"),
    durationMs: z.number(),
    trajectories: z
      .object({
        expected: z.number().int(),
        finished: z.number().int(),
        infraRetries: InfraRetryCount.describe("infra retries of all its trajectories"),
        outcomes: z.record(OutcomeKind, z.number().int()),
        limits: z
          .partialRecord(LimitName, z.number().int())
          .describe("trajectories ended by each limit (limits_exceeded and timeout)"),
      })
      .strict(),
    meanReward: z.number().nullable(),
    tasks: z.array(TaskSummary),
    dataset: RunDatasetSummary.optional().describe("set for --dataset runs"),
    lost: z
      .array(z.string())
      .optional()
      .describe(
        "trajectories of a written group whose directory or result.json was deleted: a group line is final, so they are reported, not run again",
      ),
    atropos: z
      .object({ sent: z.number().int(), dropped: z.number().int(), pending: z.number().int() })
      .strict()
      .optional(),
  })
  .strict();
export type RunSummary = z.infer<typeof RunSummary>;

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : null);

export function summarizeTask(
  taskId: string,
  groupSize: number,
  results: readonly TrajectoryResult[],
  group: "written" | "missing",
  atropos: TaskSummary["atropos"],
  error?: TaskSummary["error"],
): TaskSummary {
  const rewards: (number | null)[] = Array.from({ length: groupSize }, () => null);
  const outcomes: Record<string, number> = {};
  for (const r of results) {
    rewards[r.index] = r.reward;
    outcomes[r.outcome.kind] = (outcomes[r.outcome.kind] ?? 0) + 1;
  }
  const scored = results.map((r) => r.reward).filter((x): x is number => x !== null);
  return {
    taskId,
    trajectories: results.length,
    expected: groupSize,
    rewards,
    meanReward: mean(scored),
    resolved: scored.filter((x) => x === 1).length,
    outcomes,
    reasons: [...results]
      .sort((a, b) => a.index - b.index)
      .map((r) => ({ trajectoryId: r.trajectoryId, index: r.index, ...reasonOf(r.outcome) })),
    group,
    atropos,
    ...(error ? { error } : {}),
  };
}

/** Trajectories by outcome kind (every kind present, 0 when none) and by limit (only those hit). */
export function countOutcomes(results: readonly TrajectoryResult[]): {
  outcomes: Record<OutcomeKind, number>;
  limits: Partial<Record<LimitName, number>>;
} {
  const outcomes = Object.fromEntries(OutcomeKind.options.map((k) => [k, 0])) as Record<OutcomeKind, number>;
  const limits: Partial<Record<LimitName, number>> = {};
  for (const r of results) {
    outcomes[r.outcome.kind]++;
    const { limit } = reasonOf(r.outcome);
    if (limit) limits[limit] = (limits[limit] ?? 0) + 1;
  }
  return { outcomes, limits };
}

/**
 * A run's duration over its sessions: the first session's time, plus each `--resume` that did some
 * work; a resume with nothing left to do keeps the stored duration.
 */
export function runDurationMs(prior: number | undefined, sessionMs: number, didWork: boolean): number {
  if (prior === undefined) return sessionMs;
  return didWork ? prior + sessionMs : prior;
}

/** What a run's summary is made of: what is on disk at its end, and how the session went. */
export interface RunSummaryInput {
  readonly runId: string;
  readonly out: string;
  /** The run's task ids, in run order. */
  readonly tasks: readonly string[];
  readonly groupSize: number;
  /** Every finished trajectory of the run (earlier sessions' included). */
  readonly results: readonly TrajectoryResult[];
  /** Trajectories the run has in all. */
  readonly expected: number;
  readonly groupsWritten: ReadonlySet<string>;
  /** Where a task's group stands with Atropos ("off": the run does not send). */
  readonly atroposOf: (taskId: string) => TaskSummary["atropos"];
  readonly sendsToAtropos: boolean;
  readonly taskErrors: ReadonlyMap<string, NonNullable<TaskSummary["error"]>>;
  readonly interrupted: boolean;
  readonly durationMs: number;
  readonly dataset?: RunDatasetSummary | undefined;
  /** Members of written groups whose result is gone (Plan.lost). */
  readonly lost?: readonly string[] | undefined;
}

/** Task failures that stop the run as a whole: the machine cannot write its files. */
const STOPPING = new Set(["E_DISK_FULL", "E_WRITE"]);

/** Why the run stopped, when a task failed for a reason every task shares (a full disk). Pure. */
export function stoppedOf(errors: RunSummaryInput["taskErrors"]): RunSummary["stopped"] {
  const e = [...errors.values()].find((x) => STOPPING.has(x.code));
  return e ? { code: e.code, message: e.message } : undefined;
}

/** summary.json of a run. Pure. */
export function runSummaryOf(o: RunSummaryInput): RunSummary {
  const stopped = stoppedOf(o.taskErrors);
  const tasks = o.tasks.map((taskId) =>
    summarizeTask(
      taskId,
      o.groupSize,
      o.results.filter((r) => r.taskId === taskId),
      o.groupsWritten.has(taskId) ? "written" : "missing",
      o.atroposOf(taskId),
      o.taskErrors.get(taskId),
    ),
  );
  const { outcomes, limits } = countOutcomes(o.results);
  return {
    runId: o.runId,
    out: o.out,
    complete: o.results.length === o.expected && tasks.every((t) => t.group === "written"),
    interrupted: o.interrupted,
    ...(stopped ? { stopped } : {}),
    durationMs: o.durationMs,
    trajectories: {
      expected: o.expected,
      finished: o.results.length,
      infraRetries: o.results.reduce((n, r) => n + infraRetryCount(r), 0),
      outcomes,
      limits,
    },
    meanReward: mean(o.results.map((r) => r.reward).filter((x): x is number => x !== null)),
    tasks,
    ...(o.dataset ? { dataset: o.dataset } : {}),
    ...(o.lost && o.lost.length > 0 ? { lost: [...o.lost] } : {}),
    ...(o.sendsToAtropos
      ? {
          atropos: {
            sent: tasks.filter((t) => t.atropos === "sent").length,
            dropped: tasks.filter((t) => t.atropos === "dropped").length,
            pending: tasks.filter((t) => t.atropos === "pending" && t.group === "written").length,
          },
        }
      : {}),
  };
}

/** The summary table as lines. */
export function renderSummary(s: RunSummary): string[] {
  const rows = s.tasks.map((t) => ({
    task: t.taskId,
    done: `${t.trajectories}/${t.expected}`,
    mean: t.meanReward === null ? "-" : t.meanReward.toFixed(2),
    resolved: String(t.resolved),
    rewards: t.rewards.map((r) => (r === null ? "-" : r.toFixed(2))).join(" "),
    outcomes: Object.entries(t.outcomes)
      .map(([k, v]) => `${k}:${v}`)
      .join(" "),
    atropos: t.atropos,
  }));
  const cols = ["task", "done", "mean", "resolved", "rewards", "outcomes", "atropos"] as const;
  const widths = cols.map((c) => Math.max(c.length, ...rows.map((r) => r[c].length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  const out = [line(cols.map((c) => c.toUpperCase())), ...rows.map((r) => line(cols.map((c) => r[c])))];
  const t = s.trajectories;
  out.push(
    `${t.finished}/${t.expected} trajectories, mean reward ${s.meanReward === null ? "-" : s.meanReward.toFixed(3)}, ` +
      `${t.infraRetries} infra retr${t.infraRetries === 1 ? "y" : "ies"}, ${(s.durationMs / 1000).toFixed(1)} s` +
      (s.interrupted ? " — INTERRUPTED (finish with --resume)" : s.complete ? "" : " — INCOMPLETE"),
  );
  if (s.stopped)
    out.push(`STOPPED: ${s.stopped.code}: ${s.stopped.message} (free what it needs, then --resume ${s.out})`);
  if (s.lost)
    out.push(
      `LOST: ${s.lost.length} trajectory dir(s) of written groups are gone (${s.lost.slice(0, 5).join(", ")}${s.lost.length > 5 ? ", …" : ""}); their groups stand, nothing was rerun`,
    );
  const limits = Object.entries(t.limits);
  if (limits.length > 0) out.push(`ended by a limit: ${limits.map(([k, v]) => `${k}:${v}`).join(" ")}`);
  for (const t of s.tasks) {
    if (t.error) out.push(`${t.taskId} could not run: ${t.error.code}: ${t.error.message.split("\n")[0]}`);
  }
  if (s.dataset) {
    const d = s.dataset;
    out.push(
      `dataset ${d.file}: ${d.rows} rows, ${d.accepted} accepted, ${d.rejected} rejected, ${d.used} rolled out`,
    );
  }
  if (s.atropos) {
    out.push(
      `atropos: ${s.atropos.sent} sent, ${s.atropos.dropped} dropped by rules, ${s.atropos.pending} pending`,
    );
  }
  return out;
}
