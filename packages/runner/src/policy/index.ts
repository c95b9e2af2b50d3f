export { applyHunks, type FilePatch, type Hunk, parseUnifiedDiff } from "../text/unified-diff.js";
export { anthropicToChatRequest, chatRequestToAnthropic } from "./anthropic-convert.js";
export { AnthropicUpstream } from "./anthropic-upstream.js";
export {
  ChatMessage,
  ChatRequest,
  ChatTool,
  CompletedResponse,
  FinishReason,
  ResponseAccumulator,
  SampledTokens,
  type UpstreamEvent,
  Usage,
} from "./chat.js";
export { createUpstream, type UpstreamContext } from "./create-upstream.js";
export { OpenAiUpstream, TOKEN_FACT_PARAMS } from "./openai-upstream.js";
export { emptyPolicyTurns, type PatchToTurnsOptions, patchToClineTurns } from "./patch-to-cline-turns.js";
export {
  anthropicSamplingMembers,
  checkSampling,
  formatSamplingQuery,
  openAiSamplingMembers,
  parseSamplingQuery,
  SAMPLING_KEYS,
  SamplingParams,
  trajectorySampling,
} from "./sampling.js";
export {
  loadScriptedPlan,
  parseScriptedPlan,
  planTurns,
  ScriptedPlan,
} from "./scripted-plan.js";
export { PlanUpstream } from "./scripted-upstream.js";
export {
  formatPolicySpec,
  PolicySpec,
  parsePolicySpec,
  samplingOf,
  withSamplingDefaults,
} from "./spec.js";
export {
  type ClientProtocol,
  type PolicyUpstream,
  type UpstreamCall,
  UpstreamError,
} from "./upstream.js";
