import type { ScriptedToolCall } from "@flakegym/cline-vendor";

/**
 * Cline's tool protocol, the two ways: as XML tags in the assistant text (the generic prompt Cline
 * gives unknown model ids) or as native function calls (model ids Cline knows as new-generation).
 * Cline trims every XML parameter value, so values are written on their own lines.
 */

function paramValue(v: unknown): string {
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** Renders one tool call as Cline's XML tags. */
export function renderXmlToolCall(call: ScriptedToolCall): string {
  const params = Object.entries(call.arguments)
    .map(([k, v]) => {
      const value = paramValue(v);
      return value.includes("\n") ? `<${k}>\n${value}\n</${k}>` : `<${k}>${value}</${k}>`;
    })
    .join("\n");
  return `<${call.name}>\n${params}\n</${call.name}>`;
}

/** The JSON arguments string of a native tool call. */
export function nativeArguments(call: ScriptedToolCall): string {
  const args: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(call.arguments)) args[k] = v;
  return JSON.stringify(args);
}

/** POSIX single-quoting for a path in a shell command. */
export function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./@%+=:,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
