import { access, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { FlakegymError } from "../errors.js";
import { readTurnLog, type TurnRecord } from "../gateway/turn-log.js";
import { notJsonError } from "../run-format/json-file.js";
import { InfraRetryCount, Outcome, type RunManifest, TrajectoryResult } from "../run-format/schema.js";
import { PhaseMs, servedResultOf } from "../run-format/trajectory-record.js";
import { type ExportSegment, exportTrajectory } from "./export-trajectory.js";
import { MASKED } from "./tokenize-for-trainer.js";
import type { ChatTokenizer } from "./tokenizer.js";

/**
 * One finished trajectory as `flakegym serve` streams it and `flakegym export` maps it: the token
 * sequences (segments) with a 0/1 loss mask and the inference logprobs the upstream returned,
 * the reward and its breakdown, the outcome, timings and provenance. The same record feeds every
 * trainer format (src/export/formats, adapters/python): one mapping per format.
 */

export const ServedCall = z
  .object({
    seq: z.number().int().describe("turn-log seq of the call"),
    start: z.number().int().describe("first token of its completion in the segment"),
    end: z.number().int().describe("end (exclusive) of its completion"),
    text: z.string().describe("the answer's text as the client received it"),
    tool_calls: z
      .array(z.object({ id: z.string(), name: z.string(), arguments: z.string() }).strict())
      .describe("native tool calls (Cline's XML tool tags are in text)"),
    finish_reason: z
      .string()
      .nullable()
      .describe("as the upstream reported it (stop, length, tool_calls, …)"),
    latency_ms: z.number().describe("request to last byte"),
  })
  .strict();
export type ServedCall = z.infer<typeof ServedCall>;

export const ServedSegment = z
  .object({
    index: z.number().int().nonnegative().describe("0-based segment of the trajectory"),
    tokens: z.array(z.number().int()).describe("the whole sequence: prompts and sampled completions"),
    loss_mask: z.array(z.union([z.literal(0), z.literal(1)])).describe("1 = a sampled token (trained)"),
    logprobs: z
      .array(z.number())
      .nullable()
      .describe(
        "inference logprob of each token (0 on untrained positions); null when the upstream gave none",
      ),
    reward: z
      .number()
      .nullable()
      .describe("the trajectory's reward: every segment carries it whole (an outcome reward)"),
    split: z
      .object({
        kind: z
          .string()
          .describe(
            "history_rewritten | prompt_repeated | prompt_shrunk | template_rewrite | answer_rerendered",
          ),
        at_call: z.number().int().describe("turn-log seq of the call that started this segment"),
        position: z.number().int(),
        detail: z.string(),
      })
      .strict()
      .nullable()
      .describe("why this segment started (null for the first)"),
    completion_source: z
      .enum(["sampled", "template", "mixed"])
      .describe("sampled: ids as the upstream sampled them"),
    calls: z
      .array(ServedCall)
      .optional()
      .describe("the model calls of this segment, in order (absent in records of older versions)"),
  })
  .strict();
export type ServedSegment = z.infer<typeof ServedSegment>;

export const ServedTrajectory = z
  .object({
    type: z.literal("trajectory"),
    run_id: z.string(),
    trajectory_id: z.string(),
    task_id: z.string(),
    index: z.number().int().nonnegative().describe("position in the group"),
    policy: z.string().describe("policy spec the trajectory ran with (no secrets)"),
    outcome: Outcome.describe("how it ended ({kind, detail, …}); limits_exceeded and timeout name the limit"),
    reward: z.number().nullable().describe("null when the machinery failed for good (infra_error)"),
    reward_breakdown: z
      .object({
        terms: z.array(
          z.object({ name: z.string(), weight: z.number(), value: z.number().nullable() }).strict(),
        ),
        tests: z.unknown().optional(),
        tampered: z.array(z.string()).optional(),
      })
      .strict()
      .nullable(),
    timings_ms: PhaseMs.extend({
      model: z.number().optional().describe("of agent: time spent waiting for model calls"),
    }).strict(),
    turns: z.number().int(),
    infra_retries: InfraRetryCount,
    segments: z.array(ServedSegment).describe("token sequences; several when the context was rewritten"),
    skipped_calls: z
      .array(z.object({ seq: z.number().int(), reason: z.string() }).strict())
      .describe("model calls left out of the token export, with why"),
    provenance: z.record(z.string(), z.unknown()),
    prompt: z.string().optional().describe("the task prompt the agent was given"),
  })
  .strict();
export type ServedTrajectory = z.infer<typeof ServedTrajectory>;

/** The provenance of a trajectory from its run's manifest. Pure. */
export function provenanceOf(m: RunManifest, taskId: string): Record<string, unknown> {
  return {
    ...m.tasks[taskId],
    flakegym_version: m.provenance.flakegymVersion,
    cline_version: m.provenance.cline.version,
    ...(m.provenance.cline.integrity ? { cline_integrity: m.provenance.cline.integrity } : {}),
    ...(m.provenance.imageDigest ? { image_digest: m.provenance.imageDigest } : {}),
    seed: m.config.seed,
  };
}

/** Turn records + result → the served record. Pure (the tokenizer only decodes for split details). */
export function servedTrajectory(
  m: RunManifest,
  r: TrajectoryResult,
  turns: readonly TurnRecord[],
  tok: ChatTokenizer,
): ServedTrajectory {
  const ex = exportTrajectory(turns, tok, r.reward === null ? {} : { reward: r.reward });
  const bySeq = new Map(turns.map((t) => [t.seq, t]));
  const { prompt, ...fromResult } = servedResultOf(r);
  return {
    type: "trajectory",
    run_id: m.runId,
    ...fromResult,
    timings_ms: { ...fromResult.timings_ms, model: turns.reduce((n, t) => n + t.latency.totalMs, 0) },
    segments: ex.segments.map((g) => ({
      index: g.index,
      tokens: g.tokens,
      loss_mask: g.masks.map((x) => (x === MASKED ? 0 : 1)),
      logprobs: g.inference_logprobs
        ? g.inference_logprobs.map((l, i) => (g.masks[i] === MASKED ? 0 : l))
        : null,
      reward: g.reward,
      split: g.split
        ? { kind: g.split.kind, at_call: g.split.atSeq, position: g.split.position, detail: g.split.detail }
        : null,
      completion_source: g.completionSource,
      calls: callsOfSegment(g, bySeq),
    })),
    skipped_calls: ex.skipped,
    provenance: provenanceOf(m, r.taskId),
    prompt,
  };
}

/** The calls of an export segment with their answers (spans from the export, text from the log). Pure. */
export function callsOfSegment(g: ExportSegment, bySeq: ReadonlyMap<number, TurnRecord>): ServedCall[] {
  return g.seqs.flatMap((seq, i) => {
    const t = bySeq.get(seq);
    const span = g.spans?.[i];
    if (!t?.response || !span) return [];
    return [
      {
        seq,
        start: span[0],
        end: span[1],
        text: t.response.text,
        tool_calls: t.response.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
        finish_reason: t.response.finishReason ?? null,
        latency_ms: t.latency.totalMs,
      },
    ];
  });
}

/** Reads a finished trajectory's turn log and builds its record. */
export async function readServedTrajectory(
  runDir: string,
  m: RunManifest,
  r: TrajectoryResult,
  tok: ChatTokenizer,
): Promise<ServedTrajectory> {
  const file = join(runDir, "trajectories", r.trajectoryId, "turns.jsonl");
  // a trajectory that never reached the model (infra failure, no worker) has no turn log
  const exists = await access(file).then(
    () => true,
    () => false,
  );
  const turns = exists ? await readTurnLog(file) : [];
  return servedTrajectory(m, r, turns, tok);
}

/** A trajectory whose result.json exists but cannot be read as one, and why (naming the file). */
export interface UnreadableResult {
  readonly trajectory_id: string;
  readonly reason: string;
}

/** The reason a result.json's text is no TrajectoryResult, naming the file and a next step (else undefined). Pure. */
function resultProblem(file: string, text: string): { result?: TrajectoryResult; reason?: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const e = notJsonError(file, err, "");
    return {
      reason: `${e.message}: it is skipped; delete its trajectory dir and --resume the run to rerun it`,
    };
  }
  const r = TrajectoryResult.safeParse(value);
  if (r.success) return { result: r.data };
  const i = r.error.issues[0]!;
  return {
    reason: `${file}: field '${i.path.join(".")}': ${i.message}: it is skipped; restore the file, or delete its trajectory dir and --resume the run`,
  };
}

/**
 * Every finished trajectory of a run directory, in task then index order, and those whose
 * result.json does not read (cut or edited): one bad file is named and skipped, never costs the rest.
 */
export async function readResultsReport(
  runDir: string,
): Promise<{ results: TrajectoryResult[]; unreadable: UnreadableResult[] }> {
  const results: TrajectoryResult[] = [];
  const unreadable: UnreadableResult[] = [];
  const ids = await readdir(join(runDir, "trajectories")).catch(() => [] as string[]);
  for (const id of ids) {
    const file = join(runDir, "trajectories", id, "result.json");
    const text = await readFile(file, "utf8").catch(() => undefined);
    if (text === undefined) continue;
    const { result, reason } = resultProblem(file, text);
    if (result) results.push(result);
    else unreadable.push({ trajectory_id: id, reason: reason! });
  }
  results.sort((a, b) => a.taskId.localeCompare(b.taskId) || a.index - b.index);
  return { results, unreadable };
}

/** Every finished trajectory of a run directory; a result.json that does not read throws naming it. */
export async function readResults(runDir: string): Promise<TrajectoryResult[]> {
  const { results, unreadable } = await readResultsReport(runDir);
  if (unreadable.length > 0) throw new FlakegymError("E_RESULT", unreadable[0]!.reason);
  return results;
}

/** The records a group streamed, in group order. */
export async function readGroupRecords(recordsDir: string): Promise<ServedTrajectory[]> {
  const records: ServedTrajectory[] = [];
  for (const f of await readdir(recordsDir).catch(() => [] as string[])) {
    if (!f.endsWith(".json")) continue;
    records.push(ServedTrajectory.parse(JSON.parse(await readFile(join(recordsDir, f), "utf8"))));
  }
  return records.sort((a, b) => a.task_id.localeCompare(b.task_id) || a.index - b.index);
}
