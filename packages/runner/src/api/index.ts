import { type EnvEvaluationOptions, type EnvEvaluationResult, evaluation } from "./evaluation.js";
import { type EnvRolloutOptions, type EnvRolloutResult, rollout } from "./rollout.js";

export { Outcome } from "../run-format/schema.js";
export type { CallOptions } from "./call.js";
export {
  type EnvEvaluationOptions,
  type EnvEvaluationResult,
  evaluation,
  fallbackHint,
  pickScore,
  ScoreSource,
} from "./evaluation.js";
export { evaluationVerdict, type Verdict, type VerdictInput } from "./evaluation-verdict.js";
export type { ApiEvent, ApiEventSink } from "./events.js";
export { LlmRef, llmEnv, parseLlm } from "./llm.js";
export { type StageEvidence, stageDriverOutcome, stageOutcomeEvidence } from "./outcome.js";
export { type EnvRolloutOptions, type EnvRolloutResult, rollout } from "./rollout.js";
export { defaultSessionsDir, EnvSession, loadSession, type SessionRef } from "./session.js";
export { type SetupOptions, setup } from "./setup.js";
export { classifyTarget, TargetRef } from "./target.js";
export { type TeardownOptions, teardown } from "./teardown.js";
export { guessProfile } from "./workspace.js";

/** `rollout` then `evaluation` on the same session. */
export async function rolloutAndEvaluation(
  llm: string,
  opts: EnvRolloutOptions & Omit<EnvEvaluationOptions, "session">,
): Promise<{ rollout: EnvRolloutResult; evaluation: EnvEvaluationResult }> {
  const r = await rollout(llm, opts);
  const e = await evaluation({ ...opts, session: r.session });
  return { rollout: r, evaluation: e };
}
