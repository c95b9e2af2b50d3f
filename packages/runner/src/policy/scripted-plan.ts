import { readFile } from "node:fs/promises";
import { z } from "zod";
import { UsageError } from "../errors.js";
import { looksBinary, printable, SNIFF_BYTES } from "../text/looks-binary.js";
import { zodIssueLines } from "../text/zod-issues.js";

/**
 * The public scripted-policy plan format, version 1 (docs/scripted-policy.md). A plan is the list
 * of assistant turns a `scripted:<file>` policy replays, one per model call, in order. A turn is
 * text (XML tool tags included, as Cline's XML protocol expects) and/or tool calls; tool calls are
 * sent as native calls when Cline offers native tools and rendered as Cline's XML tags otherwise,
 * so one plan serves both protocols.
 */

export const ScriptedToolCall = z
  .object({
    name: z.string().min(1).describe("Cline tool name, e.g. write_to_file, execute_command"),
    arguments: z
      .record(z.string(), z.unknown())
      .describe("tool parameters by name (strings; other JSON values are rendered as JSON)"),
  })
  .strict();
export type ScriptedToolCall = z.infer<typeof ScriptedToolCall>;

export const ScriptedUsage = z
  .object({
    prompt_tokens: z.number().int().nonnegative().describe("prompt tokens reported to Cline"),
    completion_tokens: z.number().int().nonnegative().describe("completion tokens reported to Cline"),
  })
  .strict()
  .describe("usage reported for this turn instead of the estimate (drives Cline's context management)");
export type ScriptedUsage = z.infer<typeof ScriptedUsage>;

export const ScriptedTurn = z.union([
  z
    .object({
      text: z.string().describe("assistant text, streamed verbatim"),
      usage: ScriptedUsage.optional(),
    })
    .strict(),
  z
    .object({
      text: z.string().optional().describe("optional text before the tool calls"),
      tool_calls: z.array(ScriptedToolCall).min(1).describe("tool calls of this turn"),
      usage: ScriptedUsage.optional(),
    })
    .strict(),
]);
export type ScriptedTurn = z.infer<typeof ScriptedTurn>;

const Turns = z.array(ScriptedTurn).min(1).describe("assistant turns, one per model call, in order");

/** One of a plan's per-trial alternatives. */
export const ScriptedTrialPlan = z
  .object({
    description: z.string().optional().describe("free text for humans"),
    turns: Turns,
  })
  .strict();

export const ScriptedPlan = z
  .object({
    version: z.literal(1).describe("plan format version; this is version 1"),
    description: z.string().optional().describe("free text for humans"),
    turns: Turns.optional().describe("assistant turns, one per model call, in order (every trial)"),
    trials: z
      .array(ScriptedTrialPlan)
      .min(1)
      .optional()
      .describe(
        "instead of `turns`: one plan per trial; the policy's trial i replays trials[i mod n] (a policy that passes some trials and fails others)",
      ),
  })
  .strict()
  .refine((p) => (p.turns === undefined) !== (p.trials === undefined), {
    message: "give exactly one of 'turns' or 'trials'",
    path: ["turns"],
  });
export type ScriptedPlan = z.infer<typeof ScriptedPlan>;

/**
 * The turns trial `trial` of a policy replays (0-based: the trajectory's position among its
 * group's trajectories with the same policy). Pure.
 */
export function planTurns(plan: ScriptedPlan, trial: number): readonly ScriptedTurn[] {
  if (plan.turns) return plan.turns;
  const trials = plan.trials!;
  return trials[((trial % trials.length) + trials.length) % trials.length]!.turns;
}

/** Validates a parsed plan; errors name the file and the path of the bad field. */
export function parseScriptedPlan(data: unknown, source = "plan"): ScriptedPlan {
  const parsed = ScriptedPlan.safeParse(data);
  if (parsed.success) return parsed.data;
  const lines = zodIssueLines(parsed.error);
  throw new UsageError(
    `scripted plan ${source} is invalid:\n  ${lines.join("\n  ")}`,
    'a plan is {"version":1,"turns":[{"text":"…"} | {"tool_calls":[{"name":"…","arguments":{…}}]}]} (or "trials":[{"turns":[…]}, …]); see docs/scripted-policy.md',
  );
}

const PLAN_HINT =
  "a scripted policy's plan is a JSON file (docs/scripted-policy.md): scripted:<path of plan.json>";

/** Reads and validates a plan file; a missing, binary or non-JSON file is a usage error naming it. */
export async function loadScriptedPlan(file: string, signal?: AbortSignal): Promise<ScriptedPlan> {
  let bytes: Buffer;
  try {
    bytes = await readFile(file, signal ? { signal } : {});
  } catch (err) {
    throw new UsageError(`cannot read scripted plan '${file}': ${(err as Error).message}`, PLAN_HINT);
  }
  if (looksBinary(bytes.subarray(0, SNIFF_BYTES))) {
    throw new UsageError(`scripted plan '${file}' is a binary file, not a JSON plan`, PLAN_HINT);
  }
  let data: unknown;
  try {
    data = JSON.parse(bytes.toString("utf8"));
  } catch (err) {
    throw new UsageError(
      `scripted plan '${file}' is not valid JSON: ${printable((err as Error).message)}`,
      PLAN_HINT,
    );
  }
  return parseScriptedPlan(data, `'${file}'`);
}
