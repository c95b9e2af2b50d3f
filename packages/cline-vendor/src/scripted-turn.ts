import { z } from "zod";

/**
 * One assistant turn of a scripted policy: the one shape shared by cline-vendor's scripted OpenAI
 * server and the runner's public scripted-policy plan format, version 1 (docs/reference/scripted-policy.md).
 * A turn is text (XML tool tags included, as Cline's XML protocol expects) and/or tool calls.
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
