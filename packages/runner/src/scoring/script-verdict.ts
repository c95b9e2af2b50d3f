import { match } from "ts-pattern";
import type { ExecResult } from "../workers/types.js";
import { agentEndedScript } from "./script.js";
import type { ParsedScoring } from "./script-channel.js";

/**
 * What the end of one scoring script means: the one decision both scorer paths take (`scoreDiff`
 * and `runHiddenTests`, through scorer.ts's `scriptEnd`). Fail closed: whatever cannot be told
 * apart after the agent's code ran — a garbled channel, a lost emission, a script ended or frozen,
 * a failed install after the agent's build — scores 0 with its reason, never "no score". Only what
 * happened before any of the agent's code ran, or outside the sandbox (killed from outside, our
 * own abort), is the machinery's (infra, retried) or the task's (setup). Pure.
 */

/** Whether any of the agent's code (its build, its lint, a hidden test calling it) had started. */
export type Phase = "before_agent" | "after_agent";

/** What the scorer saw of the script's end, first match wins (see {@link observeScript}). */
export type ScriptObservation =
  | { readonly kind: "aborted" }
  | { readonly kind: "killed_outside" }
  | { readonly kind: "frozen_outside" }
  | { readonly kind: "anomaly"; readonly reason: string }
  | { readonly kind: "stopped"; readonly step: "apply" | "install"; readonly output: string }
  | { readonly kind: "done"; readonly exitCode: number; readonly missing: readonly string[] }
  | { readonly kind: "timed_out" }
  | { readonly kind: "ended_early"; readonly killed?: { readonly step: string; readonly during: boolean } };

export type ScriptVerdict =
  /** The agent's diff did not apply: a gate, reward 0. */
  | { readonly kind: "apply_failed"; readonly output: string }
  /** The hidden tests did not install before any agent code ran: the task is broken (no score). */
  | { readonly kind: "setup_failed"; readonly output: string }
  /** The machinery lost the run (retried, no score). */
  | { readonly kind: "infra"; readonly what: string }
  /**
   * The script ran; `killed`: the agent's code ended it; `failClosed`: what cannot be believed
   * (reward 0 with this reason).
   */
  | {
      readonly kind: "ran";
      readonly killed?: { readonly step: string; readonly during: boolean };
      readonly failClosed?: string;
    };

/** The phase × observation table. Pure. */
export function scriptVerdict(phase: Phase, o: ScriptObservation): ScriptVerdict {
  const after = phase === "after_agent";
  const closed = (why: string): ScriptVerdict => ({ kind: "ran", failClosed: why });
  return match(o)
    .with({ kind: "aborted" }, (): ScriptVerdict => ({ kind: "infra", what: "was aborted by the runner" }))
    .with(
      { kind: "killed_outside" },
      (): ScriptVerdict => ({
        kind: "infra",
        what: "was killed from outside its sandbox",
      }),
    )
    .with(
      { kind: "frozen_outside" },
      (): ScriptVerdict => ({
        kind: "infra",
        what: "was frozen from outside its sandbox (the sandbox process was stopped when its deadline came)",
      }),
    )
    .with(
      { kind: "anomaly" },
      (a): ScriptVerdict =>
        after
          ? closed(`the scoring channel was written from inside the sandbox: ${a.reason}`)
          : { kind: "infra", what: `garbled its output before any of the agent's code ran (${a.reason})` },
    )
    .with(
      { kind: "stopped", step: "apply" },
      (s): ScriptVerdict =>
        after
          ? closed("a 'stopped apply' after the agent's code ran")
          : { kind: "apply_failed", output: s.output },
    )
    .with(
      { kind: "stopped", step: "install" },
      (s): ScriptVerdict =>
        after
          ? closed(
              `the hidden tests did not install after the agent's build or lint ran: ${s.output.trim().slice(0, 300)}`,
            )
          : { kind: "setup_failed", output: s.output },
    )
    .with({ kind: "done" }, (d): ScriptVerdict => {
      if (!after)
        return d.exitCode === 0 && d.missing.length === 0
          ? { kind: "ran" }
          : { kind: "infra", what: `ended oddly before any of the agent's code ran (exit ${d.exitCode})` };
      if (d.missing.length) return closed(`steps ${d.missing.join(", ")} never reported`);
      if (d.exitCode !== 0)
        return closed(`the script reported its end but exited ${d.exitCode}: something ended it after`);
      return { kind: "ran" };
    })
    .with(
      { kind: "timed_out" },
      (): ScriptVerdict =>
        after
          ? closed("the scoring script ran into its whole deadline (every step has its own): it was held up")
          : { kind: "infra", what: "ran into its deadline before any of the agent's code ran" },
    )
    .with({ kind: "ended_early" }, (e): ScriptVerdict => {
      if (!after) return { kind: "infra", what: "ended before any of the agent's code ran" };
      return e.killed ? { kind: "ran", killed: e.killed } : closed("the scoring script ended early");
    })
    .exhaustive();
}

/** The observation and phase of a script's end, from its parsed channel and its exec. Pure. */
export function observeScript(
  parsed: ParsedScoring,
  exec: Pick<ExecResult, "exitCode" | "timedOut" | "sandboxKilled" | "sandboxStopped">,
  aborted: boolean,
  expected: readonly string[],
): { readonly phase: Phase; readonly observation: ScriptObservation } {
  const phase: Phase = parsed.agentRan ? "after_agent" : "before_agent";
  if (aborted) return { phase, observation: { kind: "aborted" } };
  if (exec.sandboxKilled) return { phase, observation: { kind: "killed_outside" } };
  if (exec.sandboxStopped) return { phase, observation: { kind: "frozen_outside" } };
  const a = parsed.anomalies[0];
  if (a)
    return {
      phase: a.afterAgent ? "after_agent" : "before_agent",
      observation: { kind: "anomaly", reason: a.reason },
    };
  const stopped = parsed.stoppedAt;
  if (stopped === "apply" || stopped === "install")
    return {
      phase,
      observation: { kind: "stopped", step: stopped, output: parsed.steps.get(stopped)?.output ?? "" },
    };
  if (parsed.done)
    return {
      phase,
      observation: {
        kind: "done",
        exitCode: exec.exitCode,
        missing: expected.filter((s) => !parsed.steps.has(s)),
      },
    };
  if (exec.timedOut) return { phase, observation: { kind: "timed_out" } };
  const killed = agentEndedScript(parsed);
  return { phase, observation: { kind: "ended_early", ...(killed ? { killed } : {}) } };
}
