import type { TokenSequence } from "../emit/group.js";
import {
  assistantMessageOf,
  exportTrajectory as exportTokens,
  type TrajectoryExport,
} from "../export/export-trajectory.js";
import { MASKED } from "../export/tokenize-for-trainer.js";
import type { ChatTokenizer } from "../export/tokenizer.js";
import type { TurnRecord } from "../gateway/turn-log.js";
import type { ChatMessage } from "../policy/chat.js";
import type { AtroposMessage } from "../run-format/atropos-schema.js";
import type { RunConfig, TrajectoryResult } from "../run-format/schema.js";
import type { TrajectoryExportResult } from "./deps.js";

/** A trajectory as the trainer gets it: its chat and, with a tokenizer, its token sequences. */

function toAtropos(m: ChatMessage): AtroposMessage {
  return { ...m, content: m.content ?? "" } as AtroposMessage;
}

/** The chat of a call: its request plus the answer, as the policy saw it. Pure. */
export function chatOf(turn: TurnRecord): AtroposMessage[] {
  const msgs = [...turn.request.messages];
  if (turn.response) msgs.push(assistantMessageOf(turn.response));
  return msgs.map(toAtropos);
}

/** The trajectory's chat: its last answered call's, else just the task's prompt. Pure. */
export function messagesOf(turns: readonly TurnRecord[], prompt: string): AtroposMessage[] {
  const last = turns.filter((x) => x.status === "ok" && x.response).at(-1);
  return last ? chatOf(last) : [{ role: "user", content: prompt }];
}

/**
 * The group's sequences of an export: "last" its last segment, "all" every segment, each carrying
 * the trajectory's whole reward (an outcome reward; src/export/formats/credit.ts); a split export's
 * sequences say which segment they are, and why it split. Pure.
 */
export function sequencesOf(
  ex: TrajectoryExport,
  turns: readonly TurnRecord[],
  segments: RunConfig["segments"],
  reward: number,
): TokenSequence[] {
  const bySeq = new Map(turns.map((x) => [x.seq, x]));
  const all = ex.segments.map((s) => ({ s, last: bySeq.get(s.seqs.at(-1)!) }));
  const split = (i: number) => {
    const r = ex.segments[i]?.split;
    return r ? `${r.kind} at call ${r.atSeq}: ${r.detail}` : undefined;
  };
  const chosen = segments === "all" ? all : all.slice(-1);
  // "last" trains the final segment only: the earlier segments' sampled tokens are counted, never silent
  const untrained = all
    .slice(0, all.length - chosen.length)
    .reduce((n, { s }) => n + s.masks.filter((m) => m !== MASKED).length, 0);
  return chosen.map(({ s, last }) => ({
    tokens: s.tokens,
    masks: s.masks,
    inferenceLogprobs: s.inference_logprobs,
    // every sequence carries the trajectory's whole reward, whatever the segmentation
    reward,
    ...(last && all.length > 1 ? { messages: chatOf(last) } : {}),
    ...(all.length > 1
      ? {
          segment: {
            index: s.index,
            of: all.length,
            ...(split(s.index) ? { split: split(s.index)! } : {}),
            ...(untrained > 0 ? { untrainedSampledTokens: untrained } : {}),
          },
        }
      : {}),
  }));
}

/**
 * The trajectory's chat and, with a tokenizer, its token sequences. Pure. A token export that cannot
 * be built (a tokenizer or template fault on this trajectory's calls) is no error of the group: the
 * result says why (`exportError`) and the group leaves this trajectory out.
 */
export function trajectoryExportOf(
  turns: TurnRecord[],
  result: TrajectoryResult,
  segments: RunConfig["segments"],
  tokenizer: ChatTokenizer | undefined,
): TrajectoryExportResult {
  const messages = messagesOf(turns, result.prompt);
  if (!tokenizer) return { messages };
  const reward = result.reward ?? 0;
  try {
    const ex = exportTokens(turns, tokenizer, { reward });
    return { messages, sequences: sequencesOf(ex, turns, segments, reward) };
  } catch (err) {
    return { messages, exportError: err instanceof Error ? err.message : String(err) };
  }
}
