import { readFile } from "node:fs/promises";
import { ScriptedTurn } from "@flakegym/cline-vendor";
import { z } from "zod";
import { UsageError } from "../errors.js";
import { looksBinary, printable, SNIFF_BYTES } from "../text/looks-binary.js";
import { zodIssueLines } from "../text/zod-issues.js";

/**
 * The public scripted-policy plan format, version 1 (docs/reference/scripted-policy.md). A plan is the list
 * of assistant turns a `scripted:<file>` policy replays, one per model call, in order. A turn is
 * cline-vendor's `ScriptedTurn` (the one shape its scripted server shares): text (XML tool tags
 * included, as Cline's XML protocol expects) and/or tool calls; tool calls are
 * sent as native calls when Cline offers native tools and rendered as Cline's XML tags otherwise,
 * so one plan serves both protocols.
 */

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
    'a plan is {"version":1,"turns":[{"text":"…"} | {"tool_calls":[{"name":"…","arguments":{…}}]}]} (or "trials":[{"turns":[…]}, …]); see docs/reference/scripted-policy.md',
  );
}

const PLAN_HINT =
  "a scripted policy's plan is a JSON file (docs/reference/scripted-policy.md): scripted:<path of plan.json>";

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
