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
 * a new segment starts and the reason is recorded. Segments of one trajectory share its id and each
 * carries its whole reward (an outcome reward is the trajectory's; src/export/formats/credit.ts).
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
    reward: z
      .number()
      .nullable()
      .describe("the trajectory's reward (every segment carries it whole), when a reward was given"),
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
  /** The trajectory's reward; every segment carries it whole. */
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

/** A segment being built: its tokens so far and the call that last extended it. */
export interface SegmentDraft {
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

/** One model call's tokens: its prompt and the completion trained on, with where each came from. */
export interface CallTokens {
  readonly prompt: readonly number[];
  readonly promptSource: "server" | "template";
  readonly completion: readonly number[];
  readonly logprobs: readonly (number | null)[];
  readonly completionSource: "sampled" | "template";
}

/** Template rendering options shared by every call of one export. */
type RenderKw = { templateKwargs?: Readonly<Record<string, unknown>> };

/** Pure: turn records (+ tokenizer) → segments of tokens, masks and logprobs. */
export function exportTrajectory(
  turns: readonly TurnRecord[],
  tok: ChatTokenizer,
  opts: ExportOptions = {},
): TrajectoryExport {
  const kw: RenderKw = opts.templateKwargs ? { templateKwargs: opts.templateKwargs } : {};
  const skipped: { seq: number; reason: string }[] = [];
  const drafts: SegmentDraft[] = [];
  const trajectoryId = turns[0]?.trajectoryId ?? "";
  for (const t of turns) {
    if (t.status !== "ok" || !t.response) {
      skipped.push({ seq: t.seq, reason: `status ${t.status}${t.error ? `: ${t.error}` : ""}` });
      continue;
    }
    const call = callTokens(t, tok, kw, opts.usePromptTokenIds !== false);
    if ("reason" in call) {
      skipped.push({ seq: t.seq, reason: call.reason });
      continue;
    }
    const cur = drafts[drafts.length - 1];
    if (cur !== undefined && firstDifference(cur.tokens, call.prompt) === cur.tokens.length)
      appendCall(cur, t, call);
    else
      drafts.push(
        startSegment(cur === undefined ? null : splitReason(cur, t, call.prompt, tok, kw), t, call),
      );
  }
  const segments = drafts.map((d, index) =>
    segmentOf(d, {
      trajectoryId,
      index,
      mode: opts.mode ?? "all_assistant_turns",
      reward: opts.reward,
      count: drafts.length,
    }),
  );
  return { trajectoryId, segments, skipped };
}

/**
 * A call's prompt (the server's ids when allowed and present, else the template's) and completion
 * (the sampled ids, else the template's rendering of the answer after its generation prompt), or
 * why the call cannot be trained on. Pure.
 */
export function callTokens(
  t: TurnRecord,
  tok: ChatTokenizer,
  kw: RenderKw,
  usePromptTokenIds: boolean,
): CallTokens | { reason: string } {
  const response = t.response!;
  const render = { tools: t.request.tools, ...kw };
  const serverPrompt = usePromptTokenIds ? response.tokens?.promptIds : undefined;
  const prompt = serverPrompt ?? tok.apply(t.request.messages, { ...render, addGenerationPrompt: true });
  const promptSource = serverPrompt ? "server" : "template";
  const sampled = response.tokens?.ids;
  if (sampled && sampled.length > 0) {
    const lp = response.tokens?.logprobs;
    const logprobs = lp && lp.length === sampled.length ? [...lp] : sampled.map(() => null);
    return { prompt, promptSource, completion: [...sampled], logprobs, completionSource: "sampled" };
  }
  const full = tok.apply([...t.request.messages, assistantMessageOf(response)], {
    ...render,
    addGenerationPrompt: false,
  });
  const templatePrompt = serverPrompt
    ? tok.apply(t.request.messages, { ...render, addGenerationPrompt: true })
    : prompt;
  if (firstDifference(templatePrompt, full) < templatePrompt.length) {
    return {
      reason: `the chat template does not render the answer after its generation prompt (differs at token ${firstDifference(templatePrompt, full)})`,
    };
  }
  const completion = full.slice(templatePrompt.length);
  return {
    prompt,
    promptSource,
    completion,
    logprobs: completion.map(() => null),
    completionSource: "template",
  };
}

/** Why call `t`'s prompt does not extend the segment so far, with the tokens around where it leaves. Pure. */
export function splitReason(
  cur: SegmentDraft,
  t: TurnRecord,
  prompt: readonly number[],
  tok: ChatTokenizer,
  kw: RenderKw,
): SplitReason {
  const position = firstDifference(cur.tokens, prompt);
  const { kind, detail } = splitKind(cur, t, prompt, tok, kw);
  const near = (ids: readonly number[]) => nearText(tok, ids, position);
  return {
    kind,
    atSeq: t.seq,
    position,
    detail: `${detail}; at token ${position}: had ${near(cur.tokens)}, prompt has ${near(prompt)}`,
  };
}

/** The kind of a segment boundary and what it means, checked from the plainest cause on. Pure. */
function splitKind(
  cur: SegmentDraft,
  t: TurnRecord,
  prompt: readonly number[],
  tok: ChatTokenizer,
  kw: RenderKw,
): { kind: SplitReason["kind"]; detail: string } {
  const prev = cur.last;
  const boundary = promptBoundary(cur.tokens, cur.lastPrompt, prompt);
  if (boundary === "repeated")
    return {
      kind: "prompt_repeated",
      detail: `call ${t.seq} sent call ${prev.seq}'s prompt again (the client retried after truncating its history)`,
    };
  if (boundary === "shrunk")
    return {
      kind: "prompt_shrunk",
      detail: `call ${t.seq}'s prompt is a prefix of the sequence so far (the client dropped the end of its history)`,
    };
  if (!historyExtends(prev, t))
    return {
      kind: "history_rewritten",
      detail: `call ${t.seq} does not repeat the messages of call ${prev.seq} and its answer (the client condensed or truncated the conversation)`,
    };
  const rerendered = tok.apply([...prev.request.messages, assistantMessageOf(prev.response!)], {
    tools: prev.request.tools,
    ...kw,
    addGenerationPrompt: false,
  });
  const consistent = firstDifference(rerendered, prompt) === rerendered.length;
  return consistent && cur.completion.has("sampled")
    ? {
        kind: "answer_rerendered",
        detail: `the sampled ids of call ${prev.seq} differ from the tokenization of the same text in call ${t.seq}'s prompt`,
      }
    : {
        kind: "template_rewrite",
        detail: `the chat template renders call ${prev.seq}'s answer differently inside call ${t.seq}'s prompt than it did live`,
      };
}

/** A new segment, started by call `t` for `split` (null for the first). Pure. */
function startSegment(split: SplitReason | null, t: TurnRecord, call: CallTokens): SegmentDraft {
  const d: SegmentDraft = {
    seqs: [],
    tokens: [],
    masks: [],
    logprobs: [],
    spans: [],
    split,
    completion: new Set(),
    prompt: new Set(),
    last: t,
    lastPrompt: call.prompt,
  };
  appendCall(d, t, call);
  return d;
}

/** Adds a call to its segment: the prompt's new tokens untrained, then the completion trained. */
function appendCall(d: SegmentDraft, t: TurnRecord, call: CallTokens): void {
  const ext = call.prompt.slice(d.tokens.length);
  d.tokens.push(...ext);
  d.masks.push(...ext.map(() => MASKED));
  d.logprobs.push(...ext.map(() => 1.0));
  const start = d.tokens.length;
  d.tokens.push(...call.completion);
  d.masks.push(...call.completion);
  d.logprobs.push(...call.logprobs);
  d.spans.push([start, d.tokens.length]);
  d.seqs.push(t.seq);
  d.completion.add(call.completionSource);
  d.prompt.add(call.promptSource);
  d.last = t;
  d.lastPrompt = call.prompt;
}

/**
 * A finished segment: in last-turn mode every completion but the last is masked; logprobs only
 * when every trained token has one; the trajectory's whole reward. Pure.
 */
export function segmentOf(
  d: SegmentDraft,
  at: { trajectoryId: string; index: number; mode: ExportMode; reward: number | undefined; count: number },
): ExportSegment {
  const masks = [...d.masks];
  const logprobs = [...d.logprobs];
  if (at.mode === "last_assistant_turn") {
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
    trajectoryId: at.trajectoryId,
    index: at.index,
    seqs: d.seqs,
    tokens: d.tokens,
    masks,
    inference_logprobs: complete ? (logprobs as number[]) : null,
    reward: at.reward ?? null,
    split: d.split,
    completionSource: pick(d.completion as Set<"sampled" | "template" | "mixed">, "mixed"),
    promptSource: pick(d.prompt as Set<"server" | "template" | "mixed">, "mixed"),
    spans: d.spans,
  };
}
