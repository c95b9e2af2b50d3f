import { z } from "zod";
import { promptOf } from "../tasks/dataset-row.js";

/**
 * The prompts a generic rollout asks (`prompts.jsonl` in the workspace): dataset rows, a catalog
 * task's prompt, or one question about a repository's README. Pure.
 */

export const PromptRow = z
  .object({
    prompt: z.string().min(1).describe("what the policy is asked"),
    answer: z.string().optional().describe("a string the completion must contain for reward 1"),
  })
  .strict();
export type PromptRow = z.infer<typeof PromptRow>;

const PROMPT_FIELDS = ["prompt", "problem_statement", "question", "instruction", "input"] as const;

/**
 * A dataset row's prompt and optional `answer`: the first non-empty of {@link PROMPT_FIELDS}, else
 * the first human turn of a swe-agent row's `conversations` (an array or a JSON string of
 * `{from, value}`), so the rows `rollout --dataset` takes are prompts here too.
 */
export function promptOfRow(row: unknown): PromptRow | undefined {
  if (typeof row !== "object" || row === null) return undefined;
  const r = row as Record<string, unknown>;
  const field = PROMPT_FIELDS.find((f) => typeof r[f] === "string" && (r[f] as string).trim() !== "");
  const prompt = field ? (r[field] as string) : conversationPrompt(r["conversations"]);
  if (prompt === undefined) return undefined;
  return { prompt, ...(typeof r["answer"] === "string" ? { answer: r["answer"] } : {}) };
}

const Conversation = z.array(z.object({ from: z.string(), value: z.string() }));

function conversationPrompt(value: unknown): string | undefined {
  let turns = value;
  if (typeof value === "string") {
    try {
      turns = JSON.parse(value);
    } catch {
      return undefined;
    }
  }
  const parsed = Conversation.safeParse(turns);
  return parsed.success ? promptOf(parsed.data) : undefined;
}

/** Prompt rows of a JSONL dataset text, and the lines that had none (1-based). */
export function promptsOfJsonl(text: string): { rows: PromptRow[]; rejected: number[] } {
  const rows: PromptRow[] = [];
  const rejected: number[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    let p: PromptRow | undefined;
    try {
      p = promptOfRow(JSON.parse(line));
    } catch {
      p = undefined;
    }
    if (p) rows.push(p);
    else rejected.push(i + 1);
  }
  return { rows, rejected };
}

/** One question about a repository, anchored in its README (first 2000 characters). */
export function promptsOfReadme(readme: string | undefined): PromptRow[] {
  const excerpt = (readme ?? "").slice(0, 2000).trim();
  if (excerpt === "") return [{ prompt: "Describe how to run this repository's tests." }];
  return [{ prompt: `Here is a project's README:\n\n${excerpt}\n\nHow do you run this project's tests?` }];
}
