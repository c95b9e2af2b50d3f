import { z } from "zod";
import type { RunSummary } from "../rollout/summary.js";
import { InfraRetryCount, type RunManifest, Score, TrajectoryResult } from "../run-format/schema.js";
import type { ConvMessage } from "./conversation.js";
import { EvalSummary } from "./eval-data.js";
import type { GroupRow, TrajectoryRow } from "./query.js";
import { type LockState, runStateOf } from "./run-state.js";

/** A run's state as the viewer shows it (see `runStateOf`). */
export const RunStateName = z.enum(["complete", "stopped", "failed", "running"]);

/**
 * What each of the viewer's API routes returns (the web app reads these types); `run-data.ts`
 * reads them from the run and eval dirs.
 */

export const RunListItem = z
  .object({
    ref: z.string().describe("the run dir, relative to the served root"),
    runId: z.string(),
    createdAt: z.string(),
    tasks: z.number().int(),
    policies: z.array(z.string()),
    expected: z.number().int(),
    finished: z.number().int(),
    meanReward: z.number().nullable(),
    outcomes: z.record(z.string(), z.number().int()),
    durationMs: z.number().nullable(),
    complete: z.boolean(),
    state: RunStateName.describe(
      "complete / stopped / failed / running, from what the run wrote and its lock",
    ),
    bytes: z
      .number()
      .int()
      .describe("size of the run's data files (metrics.jsonl, groups.jsonl), not its trajectory dirs"),
    error: z.string().optional().describe("why the run could not be read"),
  })
  .strict();
export type RunListItem = z.infer<typeof RunListItem>;

export const EvalListItem = z
  .object({
    ref: z.string().describe("the eval dir, relative to the served root"),
    name: z.string(),
    hasHtml: z.boolean(),
    runRef: z
      .string()
      .nullable()
      .describe("its rollout run (`<ref>/run`), whose trajectories are the trials"),
    summary: EvalSummary,
    bytes: z.number().int().describe("size of report.json"),
    error: z.string().optional().describe("why report.json could not be read"),
  })
  .strict();
export type EvalListItem = z.infer<typeof EvalListItem>;

export const IndexResponse = z
  .object({ root: z.string(), runs: z.array(RunListItem), evals: z.array(EvalListItem) })
  .strict();
export type IndexResponse = z.infer<typeof IndexResponse>;

/** The run facts a run's page shows (not all of run.json and summary.json: those grow with the run). */
export const RunFacts = z
  .object({
    runId: z.string(),
    createdAt: z.string(),
    state: RunStateName,
    tasks: z.number().int(),
    groupSize: z.number().int(),
    policies: z.array(z.string()),
    meanReward: z.number().nullable(),
    durationMs: z.number().nullable(),
    infraRetries: InfraRetryCount.nullable().describe("null: no summary yet (the page sums its rows)"),
    atropos: z.string(),
    backend: z.string(),
    images: z.string().describe("the distinct images the run's workers ran on"),
    outcomes: z.array(z.string()).describe("outcome kinds seen"),
  })
  .strict();
export type RunFacts = z.infer<typeof RunFacts>;

/** The distinct images the run's workers ran on (run.json `tasks.*.image`). Pure. */
function imagesOf(m: RunManifest): string {
  const seen = new Set<string>();
  for (const t of Object.values(m.tasks)) {
    const i = t.image;
    if (i)
      seen.add(
        typeof i === "string"
          ? i
          : i.kind === "nix-store"
            ? `store ${i.toolchain}${i.snapshot ? ` + ${i.snapshot}` : ""}${i.nixpkgs === "standin" ? " (stand-in nixpkgs)" : ""}`
            : `${i.name}:${i.tag} (${i.digest.slice(0, 12)}, ${i.storePath})`,
      );
  }
  return seen.size ? [...seen].join("; ") : "not recorded";
}

/** A run page's facts from run.json and summary.json. Pure. */
export function runFactsOf(m: RunManifest, s: RunSummary | null, lock: LockState): RunFacts {
  return {
    runId: m.runId,
    createdAt: m.createdAt,
    state: runStateOf(s, lock),
    tasks: m.config.tasks.length,
    groupSize: m.config.groupSize,
    policies: m.config.policies,
    meanReward: s?.meanReward ?? null,
    durationMs: s?.durationMs ?? null,
    infraRetries: s?.trajectories.infraRetries ?? null,
    atropos: s?.atropos
      ? `sent ${s.atropos.sent}, dropped ${s.atropos.dropped}, pending ${s.atropos.pending}`
      : m.config.atropos
        ? "pending"
        : "off",
    backend: m.config.backend,
    images: imagesOf(m),
    outcomes: s ? Object.keys(s.trajectories.outcomes) : [],
  };
}

export const RunResponse = z
  .object({
    ref: z.string(),
    facts: RunFacts,
    stamp: z.string().describe("changes when the run's files change (live updates)"),
    groups: z.array(z.custom<GroupRow>()).describe("the groups of the tasks on this page of rows"),
    groupsTotal: z.number().int().describe("groups in the run"),
    total: z.number().int().describe("rows matching the filters"),
    all: z.number().int().describe("rows in the run"),
    rows: z.array(z.custom<TrajectoryRow>()),
    skippedLines: z.number().int().describe("metrics lines that did not parse"),
  })
  .strict();
export type RunResponse = z.infer<typeof RunResponse>;

export const TrajectoryResponse = z
  .object({
    ref: z.string(),
    id: z.string(),
    result: TrajectoryResult.nullable(),
    score: Score.nullable(),
    diff: z.string().nullable(),
    diffTruncated: z.boolean(),
    conversation: z.array(z.custom<ConvMessage>()),
    conversationNote: z.string().optional(),
    lastTurn: z
      .object({ seq: z.number(), startedAt: z.string(), upstream: z.string(), status: z.string() })
      .partial()
      .nullable(),
    provenance: z.record(z.string(), z.unknown()),
    siblings: z.array(z.string()).describe("other trajectories of its group"),
  })
  .strict();
export type TrajectoryResponse = z.infer<typeof TrajectoryResponse>;

export const TokenSequenceView = z
  .object({
    segment: z.number().int().nullable(),
    segments: z.number().int().nullable(),
    split: z.string().nullable().describe("why the export split here (recorded reason)"),
    score: z.number().nullable(),
    tokens: z.array(z.number().int()),
    masks: z.array(z.number().int()),
    logprobs: z.array(z.number()).nullable(),
    text: z.array(z.string()).nullable().describe("each token decoded, when --tokenizer was given"),
  })
  .strict();
export const TokensResponse = z
  .object({
    ref: z.string(),
    id: z.string(),
    sequences: z.array(TokenSequenceView),
    note: z.string().optional(),
  })
  .strict();
export type TokensResponse = z.infer<typeof TokensResponse>;

/** The eval files the viewer shows besides report.html (report.html links them). */
export const EvalFileName = z.enum(["summary.md", "report.json"]);
export type EvalFileName = z.infer<typeof EvalFileName>;
export const EvalFileResponse = z
  .object({ name: EvalFileName, text: z.string(), truncated: z.boolean() })
  .strict();
export type EvalFileResponse = z.infer<typeof EvalFileResponse>;
