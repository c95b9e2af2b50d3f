import type { Sample } from "../contract/artifacts.js";
import { exportTrajectory } from "../export/export-trajectory.js";
import { MASKED } from "../export/tokenize-for-trainer.js";
import type { ChatTokenizer } from "../export/tokenizer.js";
import type { TurnRecord } from "../gateway/turn-log.js";
import { contentText } from "../policy/chat.js";

/**
 * Token data of the env API's samples (pure): each sample is matched to the model call that
 * produced it — the first unused answered call whose last user message is the sample's prompt and
 * whose answer is its completion (a custom stage's sample may have none) — and carries that call's
 * ids as the trainer export builds them: the server's prompt ids and the sampled ids with their
 * logprobs when the upstream returned them, the chat template's otherwise.
 */

export interface SampleTokens {
  readonly prompt_ids: number[];
  readonly completion_ids: number[];
  /** Per completion token; null when the upstream gave none. */
  readonly logprobs: number[] | null;
  /** sampled: the ids the upstream sampled; template: the chat template's rendering of the answer. */
  readonly source: "sampled" | "template" | "mixed";
  /** Turn-log seq of the call. */
  readonly call: number;
}

export type TokenizedSample = Sample & { readonly tokens?: SampleTokens };

const lastUserText = (t: TurnRecord) =>
  contentText(t.request.messages.findLast((m) => m.role === "user")?.content ?? "");

export function sampleTokensOf(
  samples: readonly Sample[],
  turns: readonly TurnRecord[],
  tok: ChatTokenizer,
): TokenizedSample[] {
  const used = new Set<number>();
  return samples.map((s) => {
    const t = turns.find(
      (x) =>
        !used.has(x.seq) &&
        x.status === "ok" &&
        x.response !== undefined &&
        x.response.text === s.completion &&
        lastUserText(x) === s.prompt,
    );
    if (!t) return s;
    used.add(t.seq);
    const seg = exportTrajectory([t], tok).segments[0];
    if (!seg) return s;
    const first = seg.masks.findIndex((m) => m !== MASKED);
    if (first < 0) return s;
    return {
      ...s,
      tokens: {
        prompt_ids: seg.tokens.slice(0, first),
        completion_ids: seg.tokens.slice(first),
        logprobs: seg.inference_logprobs ? seg.inference_logprobs.slice(first) : null,
        source: seg.completionSource,
        call: t.seq,
      },
    };
  });
}
