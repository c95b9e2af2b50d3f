import type { ServedCall } from "../served-record.js";
import type { ExportNote, Piece } from "./credit.js";
import { sampledTokens } from "./credit.js";

/**
 * A trainer's length policy (`--max-prompt-tokens`, `--max-response-tokens`), applied as verl's own
 * agent loops apply theirs before `_postprocess` pads every row to `rollout.prompt_length` and
 * `rollout.response_length`: the prompt keeps its last `maxPromptTokens` tokens
 * (`prompt_ids[-prompt_length:]`), the response its first `maxResponseTokens`
 * (`response_ids[:response_length]`, with its mask and logprobs). A row longer than those makes
 * verl's postprocess fail; the cut is counted and reported.
 */
export interface LengthCaps {
  readonly maxPromptTokens?: number;
  readonly maxResponseTokens?: number;
}

/** The calls of a cut segment: shifted by the prompt tokens removed, clipped to the response kept. Pure. */
function cutCalls(calls: readonly ServedCall[], removed: number, end: number): ServedCall[] {
  return calls
    .map((c) => ({ ...c, start: c.start - removed, end: Math.min(c.end - removed, end) }))
    .filter((c) => c.start >= 0 && c.start < c.end);
}

/** A piece within the caps, and a note when anything was cut. Pure. */
export function capPiece(p: Piece, caps: LengthCaps): { piece: Piece; note?: ExportNote } {
  const seg = p.segment;
  const promptLen = p.promptLength;
  const responseLen = seg.tokens.length - promptLen;
  const keepPrompt = Math.min(promptLen, caps.maxPromptTokens ?? promptLen);
  const keepResponse = Math.min(responseLen, caps.maxResponseTokens ?? responseLen);
  if (keepPrompt === promptLen && keepResponse === responseLen) return { piece: p };
  const from = promptLen - keepPrompt;
  const to = promptLen + keepResponse;
  const segment = {
    ...seg,
    tokens: seg.tokens.slice(from, to),
    loss_mask: seg.loss_mask.slice(from, to),
    logprobs: seg.logprobs ? seg.logprobs.slice(from, to) : null,
    ...(seg.calls ? { calls: cutCalls(seg.calls, from, to - from) } : {}),
  };
  const lost = sampledTokens(seg) - sampledTokens(segment);
  const parts = [
    ...(keepPrompt < promptLen ? [`prompt ${promptLen} → its last ${keepPrompt} tokens`] : []),
    ...(keepResponse < responseLen ? [`response ${responseLen} → its first ${keepResponse} tokens`] : []),
  ];
  return {
    piece: { ...p, segment, promptLength: keepPrompt },
    note: {
      trajectory_id: p.record.trajectory_id,
      task_id: p.record.task_id,
      reason: "length_cut",
      sampled_tokens: lost,
      handling: "cut",
      detail: `segment ${seg.index}: ${parts.join(", ")} (the length policy, as verl's agent loops cut)`,
    },
  };
}

/** Every piece within the caps, with the notes of what was cut. Pure. */
export function capPieces(
  pieces: readonly Piece[],
  caps: LengthCaps,
): { pieces: Piece[]; notes: ExportNote[] } {
  const out: Piece[] = [];
  const notes: ExportNote[] = [];
  for (const p of pieces) {
    const c = capPiece(p, caps);
    out.push(c.piece);
    if (c.note) notes.push(c.note);
  }
  return { pieces: out, notes };
}
