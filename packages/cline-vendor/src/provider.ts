import { randomBytes } from "node:crypto";
import { match } from "ts-pattern";
import { z } from "zod";
import type { ApiConfiguration } from "./client.js";

const baseUrl = z
  .url()
  .describe("base URL of the policy endpoint (the gateway), e.g. http://127.0.0.1:8000/v1");
const apiKey = z
  .string()
  .min(1)
  .optional()
  .describe(
    "token the core sends as its API key; default: a fresh random per-trajectory token (the gateway holds real keys)",
  );
const modelId = z.string().min(1).describe("model id the core asks for (decides the tool-call protocol)");

/** How the core reaches its policy. */
export const ProviderConfig = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z.literal("openai").describe("OpenAI-compatible chat completions (`<baseUrl>/chat/completions`)"),
      baseUrl,
      apiKey,
      modelId,
      contextWindow: z.number().int().positive().optional().describe("model context window in tokens"),
      maxTokens: z.number().int().positive().optional().describe("max completion tokens per turn"),
      headers: z.record(z.string(), z.string()).optional().describe("extra HTTP headers on every request"),
    })
    .strict(),
  z
    .object({
      kind: z
        .literal("anthropic")
        .describe("Anthropic-compatible messages API (the SDK appends /v1/messages)"),
      baseUrl,
      apiKey,
      modelId: modelId.describe("a model id Cline knows (unknown ids are silently replaced)"),
    })
    .strict(),
]);
export type ProviderConfig = z.infer<typeof ProviderConfig>;
export type ProviderConfigInput = z.input<typeof ProviderConfig>;

/** A fresh per-trajectory token: what the core stores and sends instead of any real key. */
export function trajectoryToken(): string {
  return `fgt-${randomBytes(18).toString("base64url")}`;
}

/**
 * The `ModelsApiConfiguration` (camelCase; snake_case on the wire) that points both plan and act
 * mode at the provider, with `token` as the key.
 */
export function apiConfigurationFor(
  provider: ProviderConfig,
  token: string,
  requestTimeoutMs?: number,
): ApiConfiguration {
  const timeout = requestTimeoutMs === undefined ? {} : { requestTimeoutMs };
  return match(provider)
    .with({ kind: "openai" }, (p) => {
      const info =
        p.contextWindow !== undefined || p.maxTokens !== undefined
          ? {
              ...(p.contextWindow !== undefined ? { contextWindow: p.contextWindow } : {}),
              ...(p.maxTokens !== undefined ? { maxTokens: p.maxTokens } : {}),
            }
          : undefined;
      return {
        openAiBaseUrl: p.baseUrl,
        openAiApiKey: token,
        ...(p.headers
          ? { openAiHeaders: Object.entries(p.headers).map(([key, value]) => ({ key, value })) }
          : {}),
        planModeApiProvider: "OPENAI" as const,
        actModeApiProvider: "OPENAI" as const,
        planModeOpenAiModelId: p.modelId,
        actModeOpenAiModelId: p.modelId,
        ...(info ? { planModeOpenAiModelInfo: info, actModeOpenAiModelInfo: info } : {}),
        ...timeout,
      };
    })
    .with({ kind: "anthropic" }, (p) => ({
      apiKey: token,
      anthropicBaseUrl: p.baseUrl,
      planModeApiProvider: "ANTHROPIC" as const,
      actModeApiProvider: "ANTHROPIC" as const,
      planModeApiModelId: p.modelId,
      actModeApiModelId: p.modelId,
      ...timeout,
    }))
    .exhaustive();
}
