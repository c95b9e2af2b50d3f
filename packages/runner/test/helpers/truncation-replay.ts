import { doubleLogprob } from "../../src/export/inference-server-double.js";
import type { ChatTokenizer } from "../../src/export/tokenizer.js";
import type { TurnRecord } from "../../src/gateway/turn-log.js";
import { ANSWERS, turn, xmlChat } from "../export/fixtures.js";

/**
 * The turn log of a Cline trajectory that hit a near-full context, as a vLLM-style server reports
 * it (server prompt ids, sampled ids + EOS, logprobs): calls 1 and 2 extend one sequence; then Cline
 * truncated its history back to the task and sent that same prompt twice (calls 3 and 4), so each
 * of their prompts is a prefix of the sequence so far.
 */
export function truncationReplay(tok: ChatTokenizer, trajectoryId = "traj-1"): TurnRecord[] {
  const call = (seq: number, messages: TurnRecord["request"]["messages"], answer: string): TurnRecord => {
    const ids = [...tok.encode(answer), tok.eosTokenId!];
    return {
      ...turn(seq, messages, {
        text: answer,
        tokens: {
          promptIds: tok.apply(messages, { addGenerationPrompt: true }),
          ids,
          logprobs: ids.map((id, p) => doubleLogprob(id, p)),
        },
      }),
      trajectoryId,
    };
  };
  const first = xmlChat(1).slice(0, -1);
  return [
    call(1, first, ANSWERS[0]!),
    call(2, xmlChat(2).slice(0, -1), ANSWERS[1]!),
    call(3, first, ANSWERS[1]!),
    call(4, first, ANSWERS[2]!),
  ];
}
