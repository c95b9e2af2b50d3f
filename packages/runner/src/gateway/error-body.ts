import type { ClientProtocol } from "../policy/upstream.js";
import { anthropicErrorBody } from "./anthropic-wire.js";
import { openAiErrorBody } from "./openai-wire.js";

/** An error's JSON body in the protocol the client spoke (pure). */
export function errorBodyOf(
  protocol: ClientProtocol,
  message: string,
  type: string,
): Record<string, unknown> {
  return protocol === "anthropic" ? anthropicErrorBody(message, type) : openAiErrorBody(message, type);
}
