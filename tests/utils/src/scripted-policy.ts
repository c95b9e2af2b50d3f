import {
  type ProviderConfigInput,
  type ScriptedOpenAiServer,
  type ScriptedOpenAiServerOptions,
  type ScriptedTurn,
  startScriptedOpenAiServer,
  xmlTool,
} from "@flakegym/cline-vendor";

/**
 * The scripted policy for tests: cline-vendor's scripted OpenAI-compatible server (one
 * implementation, also used by `flakegym doctor`) plus conveniences. It replays assistant turns
 * exactly as Cline's OpenAI-compatible provider expects them, records every request, and can hang,
 * answer 5xx N times, or send a malformed SSE stream on a chosen turn.
 */
export type ScriptedPolicy = ScriptedOpenAiServer;
export type { RecordedRequest, ScriptedTurn, TurnFault } from "@flakegym/cline-vendor";
export { xmlTool };

/** Starts a scripted policy on 127.0.0.1 (port 0) answering `turns` in order. */
export function startScriptedPolicy(
  turns: readonly ScriptedTurn[],
  options: Omit<ScriptedOpenAiServerOptions, "turns"> = {},
): Promise<ScriptedPolicy> {
  return startScriptedOpenAiServer({ ...options, turns });
}

/** The provider config that points a Cline core at a scripted policy (generic XML tool protocol). */
export function scriptedProvider(policy: ScriptedPolicy, modelId = "flakegym-scripted"): ProviderConfigInput {
  return { kind: "openai", baseUrl: policy.baseUrl, modelId };
}

/** A text turn (XML tool tags inside). */
export const say = (text: string): ScriptedTurn => ({ text });

/** Common two-turn script: write a file, then attempt completion. */
export function writeThenComplete(path: string, content: string, result = `wrote ${path}`): ScriptedTurn[] {
  return [
    say(`I'll write ${path}.\n${xmlTool.writeToFile(path, content)}`),
    say(xmlTool.attemptCompletion(result)),
  ];
}
