import { z } from "zod";
import type { TurnRecord } from "../gateway/turn-log.js";
import type { ChatMessage, CompletedResponse } from "../policy/chat.js";
import { contentText } from "../policy/chat.js";
import { firstDifference, MASKED } from "./tokenize-for-trainer.js";
import type { ChatTokenizer } from "./tokenizer.js";

/**
 * Token-faithful trainer export of one trajectory from its turn log. Each model call contributes
 * its prompt (the server's own `prompt_token_ids` when it returned them, otherwise the chat template
 * applied to the request) and its completion (the sampled ids, never re-tokenized, when known;
 * otherwise the template's rendering of the answer, as Atropos does). Consecutive calls share one
 * token sequence while each prompt extends the sequence so far; when it does not — Cline condensed
 * or truncated its context, or the template rewrote history (Qwen3 drops earlier `<think>` blocks) —
 * a new segment starts and the reason is recorded. Segments of one trajectory share its id and split
 * its reward evenly (slime's rule).
 */

export const ExportMode = z.enum(["all_assistant_turns", "last_assistant_turn"]);
export type ExportMode = z.infer<typeof ExportMode>;

export const SplitReason = z
  .object({
    kind: z
      .enum([
        "history_rewritten",
        "prompt_repeated",
        "prompt_shrunk",
        "template_rewrite",
        "answer_rerendered",
      ])
      .describe(
        "history_rewritten: the client changed earlier messages (condensed/truncated context); prompt_repeated: the client sent the previous call's prompt again (Cline does after truncating its history); prompt_shrunk: the prompt is a strict prefix of the sequence so far (the client dropped the end of its history); template_rewrite: the chat template renders past turns differently than it rendered them live; answer_rerendered: the next prompt renders the sampled answer with other tokens (re-tokenization, or template normalization such as trim)",
      ),
    atSeq: z.number().int().describe("turn-log seq of the call that started the new segment"),
    position: z.number().int().describe("first token position where the prompt left the previous segment"),
    detail: z.string(),
  })
  .strict();
export type SplitReason = z.infer<typeof SplitReason>;

export const ExportSegment = z
  .object({
    trajectoryId: z.string(),
    index: z.number().int().nonnegative(),
    seqs: z.array(z.number().int()).describe("turn-log seqs of the calls in this segment"),
    tokens: z.array(z.number().int()),
    masks: z.array(z.number().int()).describe("-100 = not trained; trained positions hold the token id"),
    inference_logprobs: z
      .array(z.number())
      .nullable()
      .describe("aligned with tokens (1.0 on untrained positions); null when any trained token lacks one"),
    reward: z.number().nullable().describe("trajectory reward / segment count, when a reward was given"),
    split: SplitReason.nullable().describe("why this segment started (null for the first)"),
    completionSource: z
      .enum(["sampled", "template", "mixed"])
      .describe("sampled: trained ids are the ids the upstream sampled; template: re-rendered text"),
    promptSource: z.enum(["server", "template", "mixed"]),
    spans: z
      .array(z.tuple([z.number().int(), z.number().int()]))
      .optional()
      .describe("[start, end) of each call's completion in tokens, in the order of seqs"),
  })
  .strict();
export type ExportSegment = z.infer<typeof ExportSegment>;

export interface TrajectoryExport {
  readonly trajectoryId: string;
  readonly segments: ExportSegment[];
  /** Calls left out (not ok, or without a usable answer), with why. */
  readonly skipped: { readonly seq: number; readonly reason: string }[];
}

export interface ExportOptions {
  readonly mode?: ExportMode;
  /** The trajectory's reward; each segment gets reward / segments. */
  readonly reward?: number;
  readonly templateKwargs?: Readonly<Record<string, unknown>>;
  /** Use the server's prompt token ids when the turn log has them (default true). */
  readonly usePromptTokenIds?: boolean;
}

/** The assistant message the way it enters the next request's history. */
export function assistantMessageOf(r: CompletedResponse): ChatMessage {
  const m: ChatMessage = { role: "assistant", content: r.text };
  if (r.toolCalls.length > 0) {
    m.tool_calls = r.toolCalls.map((c) => ({
      id: c.id,
      type: "function" as const,
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  return m;
}

const sameMessage = (a: ChatMessage, b: ChatMessage): boolean =>
  a.role === b.role &&
  contentText(a.content) === contentText(b.content) &&
  JSON.stringify((a.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments])) ===
    JSON.stringify((b.tool_calls ?? []).map((c) => [c.function.name, c.function.arguments]));

/** Does `next` keep every message of `prev` plus the answer, unchanged and in order? */
function historyExtends(prev: TurnRecord, next: TurnRecord): boolean {
  const before = [...prev.request.messages, assistantMessageOf(prev.response!)];
  const after = next.request.messages;
  if (after.length < before.length) return false;
  return before.every((m, i) => sameMessage(m, after[i]!));
}

/**
 * How a prompt that does not extend the sequence so far relates to it. Pure: "repeated" when it is
 * the previous call's prompt again, "shrunk" when it is any other prefix of the sequence (both are
 * ordinary segment boundaries), "diverged" when it leaves the sequence somewhere inside.
 */
export function promptBoundary(
  sequence: readonly number[],
  previousPrompt: readonly number[] | undefined,
  prompt: readonly number[],
): "repeated" | "shrunk" | "diverged" {
  if (
    previousPrompt !== undefined &&
    previousPrompt.length === prompt.length &&
    firstDifference(previousPrompt, prompt) === prompt.length
  )
    return "repeated";
  return prompt.length <= sequence.length && firstDifference(sequence, prompt) === prompt.length
    ? "shrunk"
    : "diverged";
}

/**
 * Up to 12 tokens of `ids` from `position`, decoded and quoted, for a split's detail; `(end)` when
 * the sequence ends there (a tokenizer refuses an empty slice). Never throws: a detail is not worth
 * a trajectory.
 */
export function nearText(tok: ChatTokenizer, ids: readonly number[], position: number): string {
  const slice = ids.slice(position, position + 12);
  if (slice.length === 0) return "(end)";
  try {
    return JSON.stringify(tok.decode(slice));
  } catch (err) {
    return `(ids ${JSON.stringify(slice)}; not decodable: ${(err as Error).message})`;
  }
}

interface Draft {
  seqs: number[];
  tokens: number[];
  masks: number[];
  logprobs: (number | null)[];
  /** [start, end) of each completion, for last-turn-only masking. */
  spans: [number, number][];
  split: SplitReason | null;
  completion: Set<"sampled" | "template">;
  prompt: Set<"server" | "template">;
  last: TurnRecord;
  /** The prompt ids of `last`. */
  lastPrompt: readonly number[];
}

/** Pure: turn records (+ tokenizer) → segments of tokens, masks and logprobs. */
export function exportTrajectory(
  turns: readonly TurnRecord[],
  tok: ChatTokenizer,
  opts: ExportOptions = {},
): TrajectoryExport {
  const mode = opts.mode ?? "all_assistant_turns";
  const kw = opts.templateKwargs ? { templateKwargs: opts.templateKwargs } : {};
  const skipped: { seq: number; reason: string }[] = [];
  const drafts: Draft[] = [];
  let cur: Draft | undefined;
  const trajectoryId = turns[0]?.trajectoryId ?? "";

  for (const t of turns) {
    if (t.status !== "ok" || !t.response) {
      skipped.push({ seq: t.seq, reason: `status ${t.status}${t.error ? `: ${t.error}` : ""}` });
      continue;
    }
    const render = { tools: t.request.tools, ...kw };
    const serverPrompt = opts.usePromptTokenIds !== false ? t.response.tokens?.promptIds : undefined;
    const prompt = serverPrompt ?? tok.apply(t.request.messages, { ...render, addGenerationPrompt: true });
    let completion: number[];
    let logprobs: (number | null)[];
    let source: "sampled" | "template";
    const sampled = t.response.tokens?.ids;
    if (sampled && sampled.length > 0) {
      completion = [...sampled];
      const lp = t.response.tokens?.logprobs;
      logprobs = lp && lp.length === sampled.length ? [...lp] : sampled.map(() => null);
      source = "sampled";
    } else {
      const full = tok.apply([...t.request.messages, assistantMessageOf(t.response)], {
        ...render,
        addGenerationPrompt: false,
      });
      const templatePrompt = serverPrompt
        ? tok.apply(t.request.messages, { ...render, addGenerationPrompt: true })
        : prompt;
      if (firstDifference(templatePrompt, full) < templatePrompt.length) {
        skipped.push({
          seq: t.seq,
          reason: `the chat template does not render the answer after its generation prompt (differs at token ${firstDifference(templatePrompt, full)})`,
        });
        continue;
      }
      completion = full.slice(templatePrompt.length);
      logprobs = completion.map(() => null);
      source = "template";
    }

    const extendsCur = cur !== undefined && firstDifference(cur.tokens, prompt) === cur.tokens.length;
    if (!cur || !extendsCur) {
      let split: SplitReason | null = null;
      if (cur) {
        const position = firstDifference(cur.tokens, prompt);
        const prev = cur.last;
        let kind: SplitReason["kind"];
        let detail: string;
        const boundary = promptBoundary(cur.tokens, cur.lastPrompt, prompt);
        if (boundary === "repeated") {
          kind = "prompt_repeated";
          detail = `call ${t.seq} sent call ${prev.seq}'s prompt again (the client retried after truncating its history)`;
        } else if (boundary === "shrunk") {
          kind = "prompt_shrunk";
          detail = `call ${t.seq}'s prompt is a prefix of the sequence so far (the client dropped the end of its history)`;
        } else if (!historyExtends(prev, t)) {
          kind = "history_rewritten";
          detail = `call ${t.seq} does not repeat the messages of call ${prev.seq} and its answer (the client condensed or truncated the conversation)`;
        } else {
          const rerendered = tok.apply([...prev.request.messages, assistantMessageOf(prev.response!)], {
            tools: prev.request.tools,
            ...kw,
            addGenerationPrompt: false,
          });
          const consistent = firstDifference(rerendered, prompt) === rerendered.length;
          kind = consistent && cur.completion.has("sampled") ? "answer_rerendered" : "template_rewrite";
          detail =
            kind === "template_rewrite"
              ? `the chat template renders call ${prev.seq}'s answer differently inside call ${t.seq}'s prompt than it did live`
              : `the sampled ids of call ${prev.seq} differ from the tokenization of the same text in call ${t.seq}'s prompt`;
        }
        const near = (ids: readonly number[]) => nearText(tok, ids, position);
        split = {
          kind,
          atSeq: t.seq,
          position,
          detail: `${detail}; at token ${position}: had ${near(cur.tokens)}, prompt has ${near(prompt)}`,
        };
      }
      cur = {
        seqs: [],
        tokens: [],
        masks: [],
        logprobs: [],
        spans: [],
        split,
        completion: new Set(),
        prompt: new Set(),
        last: t,
        lastPrompt: prompt,
      };
      drafts.push(cur);
    }
    const ext = prompt.slice(cur.tokens.length);
    cur.tokens.push(...ext);
    cur.masks.push(...ext.map(() => MASKED));
    cur.logprobs.push(...ext.map(() => 1.0));
    const start = cur.tokens.length;
    cur.tokens.push(...completion);
    cur.masks.push(...completion);
    cur.logprobs.push(...logprobs);
    cur.spans.push([start, cur.tokens.length]);
    cur.seqs.push(t.seq);
    cur.completion.add(source);
    cur.prompt.add(serverPrompt ? "server" : "template");
    cur.last = t;
    cur.lastPrompt = prompt;
  }

  const segments = drafts.map((d, index): ExportSegment => {
    const masks = [...d.masks];
    const logprobs = [...d.logprobs];
    if (mode === "last_assistant_turn") {
      for (const [s, e] of d.spans.slice(0, -1)) {
        for (let p = s; p < e; p++) {
          masks[p] = MASKED;
          logprobs[p] = 1.0;
        }
      }
    }
    const complete = logprobs.every((l) => l !== null);
    const pick = <T extends string>(s: Set<T>, mixed: T): T => (s.size === 1 ? [...s][0]! : mixed);
    return {
      trajectoryId,
      index,
      seqs: d.seqs,
      tokens: d.tokens,
      masks,
      inference_logprobs: complete ? (logprobs as number[]) : null,
      reward: opts.reward === undefined ? null : opts.reward / drafts.length,
      split: d.split,
      completionSource: pick(d.completion as Set<"sampled" | "template" | "mixed">, "mixed"),
      promptSource: pick(d.prompt as Set<"server" | "template" | "mixed">, "mixed"),
      spans: d.spans,
    };
  });
  return { trajectoryId, segments, skipped };
}
