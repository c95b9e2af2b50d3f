import { readFile } from "node:fs/promises";
import { HintsUsed, Metrics, parseSamples, readArtifact } from "../contract/artifacts.js";
import { effectiveLimits, type LimitOverrides } from "../contract/contract.js";
import type { Hint } from "../contract/hints.js";
import { meanReward, parseTestSummary, scoreOfSummary, type TestSummary } from "../contract/test-summary.js";
import type { Outcome } from "../run-format/schema.js";
import { type CallOptions, callContext, withCall } from "./call.js";
import { evaluationVerdict, NOT_RUN_EXIT, type ScoreSource } from "./evaluation-verdict.js";
import { type EnvSession, loadSession, type SessionRef } from "./session.js";
import { keepArtifact } from "./stage.js";

export interface EnvEvaluationOptions extends CallOptions {
  readonly session: SessionRef;
  readonly limits?: LimitOverrides;
}

export { ScoreSource } from "./evaluation-verdict.js";

export interface EnvEvaluationResult {
  readonly session: EnvSession;
  readonly outcome: Outcome;
  /** The evaluation measured something: a score from metrics.json, a parsed test summary, or (no test command) the mean reward. */
  readonly ok: boolean;
  /** 0..1, or null when nothing gave one. */
  readonly score: number | null;
  readonly scoreSource: ScoreSource;
  /** What the score is, or why there is none. */
  readonly reason: string;
  readonly summary?: TestSummary;
  readonly hintsUsed: HintsUsed;
  readonly metrics?: Metrics;
  readonly paths: { readonly callDir: string; readonly log: string; readonly hintsUsed: string };
  readonly durationMs: number;
}

/**
 * The score of an evaluation (pure): the stage's own `metrics.score`, else the test summary of
 * what ran, else the mean reward of the last rollout's samples. `evaluation` decides with
 * `evaluationVerdict`, which also says whether the score is a real signal.
 */
export function pickScore(
  metrics: Metrics | undefined,
  summary: TestSummary | undefined,
  rewards: readonly { reward: number }[],
): { score: number | null; source: ScoreSource } {
  if (metrics?.score !== undefined && metrics.score !== null)
    return { score: metrics.score, source: "metrics" };
  const fromTests = summary ? scoreOfSummary(summary) : undefined;
  if (fromTests !== undefined) return { score: fromTests, source: "test-summary" };
  const mean = meanReward(rewards);
  if (mean !== undefined) return { score: mean, source: "mean-reward" };
  return { score: null, source: "none" };
}

/** The hint flakegym runs itself when the stage ran none (pure): the first test command, else the first. */
export function fallbackHint(hints: readonly Hint[]): Hint | undefined {
  return hints.find((h) => h.kind === "test") ?? hints[0];
}

/**
 * Runs the contract's `evaluation` stage. When the stage records no official command in
 * `hints_used.json` and the target has hints, flakegym runs the first test hint itself in a fresh
 * sandbox and records it, so every evaluation runs at least one.
 */
export async function evaluation(opts: EnvEvaluationOptions): Promise<EnvEvaluationResult> {
  const ctx = callContext(opts);
  const session = await loadSession(opts.session, ctx.sessionsDir);
  const limits = effectiveLimits(session.contract, { ...session.limits, ...opts.limits });
  const t0 = performance.now();
  const done = await withCall(session, "evaluation", opts, limits, async (run, callDir) => {
    const r = await run({ stage: "evaluation" });
    const ran = r.outcome.kind === "completed";
    const metrics = ran ? await readArtifact(r.outDir, "metrics.json", Metrics) : undefined;
    let hintsUsed = ran ? await readArtifact(r.outDir, "hints_used.json", HintsUsed) : undefined;
    let output = r.output;
    const fallback = fallbackHint(session.hints);
    if (
      (hintsUsed === undefined || hintsUsed.commands.length === 0) &&
      fallback &&
      r.outcome.kind !== "limits_exceeded" &&
      r.outcome.kind !== "timeout"
    ) {
      const h = await run({ stage: "evaluation", command: fallback.command, label: "hint" });
      output = h.output;
      // "not found" / "not executable" (126, 127) is a command that never ran, whatever the stage says
      const ran =
        (h.outcome.kind === "completed" || h.outcome.kind === "agent_error") && !NOT_RUN_EXIT.has(h.exitCode);
      hintsUsed = {
        ok: ran,
        used_anchors: [fallback.anchor],
        commands: [fallback.command],
        reason: `run by flakegym: the evaluation stage recorded none; the command exited ${h.exitCode}${ran ? "" : " (it did not run)"} (${h.outcome.kind})`,
      };
    }
    hintsUsed ??= { ok: false, used_anchors: [], commands: [], reason: "the target has no hints" };
    const hintsPath = await keepArtifact(callDir, "hints_used.json", JSON.stringify(hintsUsed));
    if (metrics) await keepArtifact(callDir, "metrics.json", JSON.stringify(metrics));
    return {
      r,
      metrics,
      hintsUsed,
      hintsPath,
      summary: parseTestSummary(output) ?? parseTestSummary(r.output),
      callDir,
    };
  });
  const v = done.value;
  const samples = session.lastSamples
    ? parseSamples(await readFile(session.lastSamples, "utf8").catch(() => ""), session.lastSamples)
    : [];
  const verdict = evaluationVerdict({
    outcome: v.r.outcome,
    ...(v.metrics ? { metrics: v.metrics } : {}),
    ...(v.summary ? { summary: v.summary } : {}),
    hintsUsed: v.hintsUsed,
    hasHints: session.hints.length > 0,
    rewards: samples,
  });
  return {
    session: done.session,
    outcome: v.r.outcome,
    ok: verdict.ok,
    score: verdict.score,
    scoreSource: verdict.source,
    reason: verdict.reason,
    ...(v.summary ? { summary: v.summary } : {}),
    hintsUsed: v.hintsUsed,
    ...(v.metrics ? { metrics: v.metrics } : {}),
    paths: { callDir: v.callDir, log: v.r.logFile, hintsUsed: v.hintsPath },
    durationMs: Math.round(performance.now() - t0),
  };
}
